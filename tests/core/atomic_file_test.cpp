// write_file_atomically: the whole new content or the old one, never a stray temporary file.
#include "berth/core/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/test_support.h"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t files_in(const std::filesystem::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, WritesAndReplaces) {
  berth::testing::TempDir dir;
  const std::string path = dir.file("out.txt");
  berth::write_file_atomically(path, [](std::ostream& out) { out << "first"; });
  EXPECT_EQ(read_all(path), "first");
  berth::write_file_atomically(path, [](std::ostream& out) { out << "second"; });
  EXPECT_EQ(read_all(path), "second");
  EXPECT_EQ(files_in(dir.path()), 1u);
}

TEST(AtomicFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  berth::testing::TempDir dir;
  const std::string path = dir.file("out.txt");
  berth::write_file_atomically(path, [](std::ostream& out) { out << "kept"; });
  EXPECT_THROW(berth::write_file_atomically(path,
                                            [](std::ostream& out) {
                                              out << "half";
                                              throw std::runtime_error("disk on fire");
                                            }),
               std::runtime_error);
  EXPECT_EQ(read_all(path), "kept");
  EXPECT_EQ(files_in(dir.path()), 1u);
}

TEST(AtomicFile, AMissingFolderIsNamedWithTheFix) {
  berth::testing::TempDir dir;
  const std::string path = dir.file("no/such/folder/out.txt");
  std::string text = berth::testing::error_text(
      [&] { berth::write_file_atomically(path, [](std::ostream& out) { out << 1; }); });
  berth::testing::expect_contains(text,
                                  {path, "cannot create a temporary file", "make sure the folder exists"});
}

TEST(AtomicFile, AFolderInTheWayIsNamedWithTheFix) {
  berth::testing::TempDir dir;
  std::filesystem::create_directory(dir.file("taken"));
  std::string text = berth::testing::error_text(
      [&] { berth::write_file_atomically(dir.file("taken"), [](std::ostream& out) { out << 1; }); });
  berth::testing::expect_contains(text, {"cannot move", "not a folder"});
  EXPECT_EQ(files_in(dir.path()), 1u);
}

}  // namespace
