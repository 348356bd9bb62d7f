// Reading and writing safetensors files (HF's tensor format) as libtorch tensors, byte-exact to HF's writer.
#pragma once

#include "berth/io/safetensors_header.h"

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace berth::io {

at::ScalarType to_scalar_type(SafetensorsDtype dtype);
// Throws berth::Error naming `what` (the tensor) for dtypes safetensors cannot hold in berth (complex,
// quantized).
SafetensorsDtype to_safetensors_dtype(at::ScalarType type, const std::string& what);

// A safetensors file mapped into memory and validated when opened; tensors are copied out on request, so
// they outlive the file object. Copies share the mapping. The file must not be truncated while open (a
// mapped read past its new end would fault, as with any mmap'd reader).
class SafetensorsFile {
 public:
  // Throws berth::Error for a missing file, a directory, an unreadable or invalid file (see
  // parse_safetensors_header for the checks).
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const;
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const;
  std::vector<int64_t> shape(const std::string& name) const;
  at::ScalarType dtype(const std::string& name) const;
  // A CPU tensor owning a copy of the data. An unknown name throws berth::Error listing some that exist.
  at::Tensor tensor(const std::string& name) const;

 private:
  struct Mapping;
  SafetensorsFile() = default;
  const SafetensorsEntry& entry(const std::string& name) const;

  std::string path_;
  std::shared_ptr<const Mapping> mapping_;
  SafetensorsHeader header_;
  std::map<std::string, size_t> index_;  // name -> position in header_.entries
};

// Every tensor of the file, by name.
std::map<std::string, at::Tensor> load_safetensors(const std::string& path);

// Writes `tensors` to `path` as HF's safetensors serializer lays them out (same bytes for the same input),
// via a temporary file renamed into place: a failed save leaves an existing file untouched. Tensors may be on
// any device and non-contiguous (they are copied to CPU, contiguous).
void save_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace berth::io
