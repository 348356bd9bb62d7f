#!/usr/bin/env python3
# purpose: scripts/check-function-length's own test: crafted C++ (functions on one line, inside classes and
# structs, constructors with initialiser lists and braced member initialisers, lambdas and initialisers that are
# no functions, braces in strings, comments and raw strings) and the functions, first lines and lengths it must
# report, then a long function it must refuse.
import pathlib
import subprocess
import sys
import tempfile

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check-function-length"

SOURCE = r'''// a comment with a brace {
#include <string>
#define MACRO(x) { x }
namespace demo {
namespace {

bool is_auto(const std::string& v) { return v == "auto}"; }

class Block {
 public:
  Block(int a, int b) : a_(a), b_{b} {
    a_ += 1;
  }
  int get() const { return a_; }
  template <typename T>
  T cast() const {
    return static_cast<T>(a_);
  }
  bool operator==(const Block& other) const { return a_ == other.a_; }

 private:
  int a_ = 0;
  int b_{0};
};

const int kTable[] = {1, 2, 3};
const auto kLambda = [](int x) { return x + 1; };

}  // namespace

struct Point {
  int x{0};
  int norm() const;
};

int Point::norm() const {
  const auto twice = [&](int v) {
    return 2 * v;
  };
  /* a block comment } */
  const char* text = R"({"brace": "}"})";
  if (x > 0) {
    return twice(x);
  }
  return 0;
}

extern "C" int entry_point(const char* data, int size) {
  return size;
}

}  // namespace demo
'''

EXPECTED = [
    ("is_auto", 7, 1),
    ("Block", 11, 3),
    ("get", 14, 1),
    ("cast", 15, 4),
    ("operator==", 19, 1),
    ("Point::norm", 36, 11),
    ("entry_point", 48, 3),
]


def listed(path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--list", str(path)], check=True, capture_output=True,
                         text=True).stdout
    found = []
    for line in out.splitlines():
        where, name, length = line.rsplit(" ", 2)
        found.append((name, int(where.rsplit(":", 1)[1]), int(length)))
    return found


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "demo.cpp"
        path.write_text(SOURCE)
        found = listed(path)
        if found != EXPECTED:
            sys.exit(f"check-function-length --list found\n  {found}\nexpected\n  {EXPECTED}")
        # A 101-line function fails with its name and length; at the limit it passes.
        body = "\n".join(f"  x += {k};" for k in range(99))
        path.write_text("int long_one(int x) {\n" + body + "\n}\n")
        failed = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True)
        if failed.returncode == 0 or "long_one is 101 lines (limit 100)" not in failed.stderr:
            sys.exit(f"a 101-line function was not refused: {failed.returncode} {failed.stderr}")
        passed = subprocess.run([sys.executable, str(SCRIPT), "--limit", "101", str(path)], capture_output=True)
        if passed.returncode != 0:
            sys.exit("a function at the limit was refused")
    print(f"check-function-length self-test: {len(EXPECTED)} functions found as expected, the long one refused")


if __name__ == "__main__":
    main()
