// Writes the safetensors test cases (valid and hostile) as files: the fuzzer's seed corpus.
#include <fstream>
#include <iostream>
#include <string>

#include "support/safetensors_files.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: safetensors_seed_corpus DIR (an existing folder)\n";
    return 2;
  }
  int written = 0;
  for (const auto& cases :
       {berth::testing::valid_safetensors_cases(), berth::testing::hostile_safetensors_cases()}) {
    for (const auto& c : cases) {
      std::ofstream out(std::string(argv[1]) + "/" + c.name + ".safetensors", std::ios::binary);
      out << c.bytes;
      if (!out) {
        std::cerr << "safetensors_seed_corpus: cannot write " << c.name << " into " << argv[1] << "\n";
        return 1;
      }
      ++written;
    }
  }
  std::cout << "safetensors_seed_corpus: " << written << " files in " << argv[1] << "\n";
  return 0;
}
