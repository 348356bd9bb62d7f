#!/usr/bin/env bash
# scripts/check-task-switches fails on a comparison with a ModelTask value or a switch over the task outside
# src/tasks/ and src/model/, names the line, and passes the same code inside them or a switch over a trait.
set -uo pipefail
script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/check-task-switches"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/src/train" "$tree/src/tasks" "$tree/src/model" "$tree/cli"
printf 'void f() {\n  if (info.task == ModelTask::CausalLM) g();\n}\n' > "$tree/src/tasks/a.cpp"
cp "$tree/src/tasks/a.cpp" "$tree/src/model/a.cpp"
printf 'void f() {\n  switch (recipe.traits().evaluation) {}\n}\n' > "$tree/src/train/trait.cpp"
fail() { echo "check_task_switches_test: $*" >&2; exit 1; }
"$script" "$tree" > /dev/null 2>&1 || fail "a clean tree was refused"
printf 'void f() {\n  if (ModelTask::QuestionAnswering != task) g();\n}\n' > "$tree/src/train/b.cpp"
printf 'void f() {\n  switch (info.task) {}\n}\n' > "$tree/cli/c.cpp"
out=$("$script" "$tree" 2>&1) && fail "a task branch in src/train/ passed"
grep -q 'src/train/b.cpp:2:' <<< "$out" || fail "the comparison's line is not named: $out"
grep -q 'cli/c.cpp:2:' <<< "$out" || fail "the switch's line is not named: $out"
grep -q "Fix: ask the task's" <<< "$out" || fail "no fix in: $out"
grep -q 'trait.cpp' <<< "$out" && fail "a switch over a trait was refused: $out"
echo "check_task_switches_test: ok"
