// safetensors files as libtorch tensors: an mmap'd validated reader and an HF-identical writer.
#include "berth/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "berth/core/error.h"

namespace berth::io {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian data, which berth copies as is: a big-endian host would need "
              "byte swapping");

namespace {

std::string errno_text() { return std::strerror(errno); }

// Closes a descriptor on every path out.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closing can report a failed delayed write, so the writer checks it.
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

void write_all(int fd, const void* data, size_t size, const std::string& temp) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, std::min<size_t>(size, size_t{1} << 30));
    if (written < 0 && errno == EINTR) continue;
    BERTH_CHECK(written > 0, temp, ": writing failed (", errno_text(),
                "). Fix: check free space and permissions");
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

std::string some_names(const std::vector<std::string>& names) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > kShown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return names.empty() ? "none (the file holds no tensors)" : out;
}

}  // namespace

struct SafetensorsFile::Mapping {
  const uint8_t* data = nullptr;
  size_t size = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (data) ::munmap(const_cast<uint8_t*>(data), size);
  }
};

at::ScalarType to_scalar_type(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::F64:
      return at::kDouble;
    case SafetensorsDtype::F32:
      return at::kFloat;
    case SafetensorsDtype::F16:
      return at::kHalf;
    case SafetensorsDtype::BF16:
      return at::kBFloat16;
    case SafetensorsDtype::I64:
      return at::kLong;
    case SafetensorsDtype::I32:
      return at::kInt;
    case SafetensorsDtype::I16:
      return at::kShort;
    case SafetensorsDtype::I8:
      return at::kChar;
    case SafetensorsDtype::U8:
      return at::kByte;
    case SafetensorsDtype::BOOL:
      return at::kBool;
  }
  BERTH_BUG(false, "unhandled safetensors dtype ", static_cast<int>(dtype));
  return at::kFloat;
}

SafetensorsDtype to_safetensors_dtype(at::ScalarType type, const std::string& what) {
  switch (type) {
    case at::kDouble:
      return SafetensorsDtype::F64;
    case at::kFloat:
      return SafetensorsDtype::F32;
    case at::kHalf:
      return SafetensorsDtype::F16;
    case at::kBFloat16:
      return SafetensorsDtype::BF16;
    case at::kLong:
      return SafetensorsDtype::I64;
    case at::kInt:
      return SafetensorsDtype::I32;
    case at::kShort:
      return SafetensorsDtype::I16;
    case at::kChar:
      return SafetensorsDtype::I8;
    case at::kByte:
      return SafetensorsDtype::U8;
    case at::kBool:
      return SafetensorsDtype::BOOL;
    default:
      BERTH_FAIL(
          "safetensors: tensor '", what, "' has dtype ", c10::toString(type),
          ", which berth does not save (it saves float64/32/16, bfloat16, int64/32/16/8, uint8 and bool). "
          "Fix: convert it, e.g. tensor.to(torch::kFloat32)");
  }
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  struct stat info {};
  BERTH_CHECK(::stat(path.c_str(), &info) == 0, path, ": cannot open the safetensors file (", errno_text(),
              "). Fix: check the path");
  BERTH_CHECK(!S_ISDIR(info.st_mode), path,
              ": is a directory, not a safetensors file. Fix: pass the file inside it (e.g. ", path,
              "/model.safetensors)");
  BERTH_CHECK(S_ISREG(info.st_mode), path, ": is not a regular file. Fix: pass a safetensors file");

  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  BERTH_CHECK(fd.get() >= 0, path, ": cannot open the safetensors file (", errno_text(),
              "). Fix: check its permissions");
  // The size of the open file, not of whatever the path named a moment ago.
  BERTH_CHECK(::fstat(fd.get(), &info) == 0, path, ": cannot read its size (", errno_text(), ")");
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(info.st_size);
  if (mapping->size > 0) {
    void* address = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    BERTH_CHECK(address != MAP_FAILED, path, ": cannot map the file into memory (", errno_text(),
                "). Fix: check free address space and that the file system supports mmap");
    mapping->data = static_cast<const uint8_t*>(address);
  }

  SafetensorsFile file;
  file.path_ = path;
  file.header_ = parse_safetensors_header(mapping->data, mapping->size, path);
  file.mapping_ = std::move(mapping);
  for (size_t i = 0; i < file.header_.entries.size(); ++i)
    file.index_.emplace(file.header_.entries[i].name, i);
  return file;
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const { return header_.metadata; }

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, position] : index_) out.push_back(name);
  return out;
}

bool SafetensorsFile::contains(const std::string& name) const { return index_.count(name) > 0; }

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = index_.find(name);
  BERTH_CHECK(
      it != index_.end(), path_, ": no tensor named '", name, "'; the file holds ", some_names(names()),
      ". Fix: check the name (HF names look like 'bert.encoder.layer.0.attention.self.query.weight')");
  return header_.entries[it->second];
}

std::vector<int64_t> SafetensorsFile::shape(const std::string& name) const { return entry(name).shape; }

at::ScalarType SafetensorsFile::dtype(const std::string& name) const {
  return to_scalar_type(entry(name).dtype);
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  at::Tensor out = at::empty(e.shape, at::TensorOptions().dtype(to_scalar_type(e.dtype)));
  const size_t bytes = e.end - e.begin;
  BERTH_BUG(static_cast<size_t>(out.nbytes()) == bytes, "tensor '", name, "' holds ", out.nbytes(),
            " bytes, its span ", bytes);
  if (bytes == 0) return out;
  std::memcpy(out.data_ptr(), mapping_->data + header_.data_offset + e.begin, bytes);
  // torch assumes bool bytes are 0 or 1; a file may hold any byte there.
  if (e.dtype == SafetensorsDtype::BOOL) {
    auto* flags = static_cast<uint8_t*>(out.data_ptr());
    for (size_t i = 0; i < bytes; ++i) flags[i] = flags[i] != 0;
  }
  return out;
}

std::map<std::string, at::Tensor> load_safetensors(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  std::map<std::string, at::Tensor> out;
  for (const std::string& name : file.names()) out.emplace(name, file.tensor(name));
  return out;
}

void save_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsEntry> entries;
  std::vector<at::Tensor> data;
  for (const auto& [name, tensor] : tensors) {
    BERTH_CHECK(tensor.defined(), path, ": tensor '", name,
                "' is undefined (an empty at::Tensor()). Fix: leave it out or give it a value");
    BERTH_CHECK(tensor.layout() == at::kStrided, path, ": tensor '", name, "' has layout ", tensor.layout(),
                "; safetensors holds dense tensors only. Fix: save tensor.to_dense()");
    SafetensorsEntry entry;
    entry.name = name;
    entry.dtype = to_safetensors_dtype(tensor.scalar_type(), name);
    entry.shape = tensor.sizes().vec();
    entries.push_back(std::move(entry));
    data.push_back(tensor.to(at::kCPU).contiguous());
  }
  std::vector<size_t> order = safetensors_layout_order(entries);
  std::vector<SafetensorsEntry> sorted;
  uint64_t offset = 0;
  for (size_t i : order) {
    SafetensorsEntry entry = entries[i];
    entry.begin = offset;
    offset += static_cast<uint64_t>(data[i].nbytes());
    entry.end = offset;
    sorted.push_back(std::move(entry));
  }
  const std::string header = serialize_safetensors_header(sorted, metadata);

  // A unique name beside the target, so that rename() stays within one file system and is atomic.
  static std::atomic<unsigned> counter{0};
  const std::string temp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  FileDescriptor fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  BERTH_CHECK(fd.get() >= 0, path, ": cannot create the temporary file ", temp, " (", errno_text(),
              "). Fix: make sure the folder exists and is writable");
  try {
    write_all(fd.get(), header.data(), header.size(), temp);
    for (size_t i : order)
      write_all(fd.get(), data[i].data_ptr(), static_cast<size_t>(data[i].nbytes()), temp);
    // Durable before it replaces the old file: a crash after the rename must not leave an empty model.
    BERTH_CHECK(::fsync(fd.get()) == 0, temp, ": flushing to disk failed (", errno_text(),
                "). Fix: check free space");
    BERTH_CHECK(fd.close(), temp, ": closing failed (", errno_text(), "). Fix: check free space");
    BERTH_CHECK(::rename(temp.c_str(), path.c_str()) == 0, path, ": cannot move ", temp, " into place (",
                errno_text(), "). Fix: make sure the path is not a directory and its folder is writable");
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

}  // namespace berth::io
