// ZeRO checkpoints: per-rank shard files plus a layout, read back into any other partition or whole.
#include "berth/dist/zero_checkpoint.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/io/safetensors.h"

namespace berth::dist {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLayoutFormat = "berth-zero-layout";
constexpr const char* kShardFormat = "berth-zero-shard";
constexpr int kVersion = 1;
constexpr const char* kKinds[] = {"master", "exp_avg", "exp_avg_sq"};

std::string zero_dir(const std::string& checkpoint_dir) {
  return (fs::path(checkpoint_dir) / "zero").string();
}
std::string layout_path(const std::string& checkpoint_dir) {
  return (fs::path(checkpoint_dir) / "zero" / "layout.json").string();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string range_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// FNV-1a of the layout's signature: ties every rank file to the layout it was cut from, so a shard left over
// from another model or run is refused instead of read as if it fitted.
std::string fingerprint(const FlatLayout& layout) {
  uint64_t hash = 1469598103934665603ull;
  for (const unsigned char c : layout.signature()) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string piece_name(const std::string& param, int64_t begin, int64_t end, const char* kind) {
  return param + "/" + std::to_string(begin) + "-" + std::to_string(end) + "/" + kind;
}

// "<param>/<begin>-<end>/master" -> (param, begin, end); nullopt for any other tensor name.
struct PieceName {
  std::string param;
  int64_t begin = 0;
  int64_t end = 0;
};
std::optional<PieceName> parse_master_name(const std::string& name) {
  const std::string suffix = "/master";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string head = name.substr(0, name.size() - suffix.size());
  const size_t slash = head.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::string range = head.substr(slash + 1);
  const size_t dash = range.find('-');
  if (dash == std::string::npos) return std::nullopt;
  try {
    size_t used_begin = 0;
    size_t used_end = 0;
    PieceName piece{head.substr(0, slash), std::stoll(range.substr(0, dash), &used_begin),
                    std::stoll(range.substr(dash + 1), &used_end)};
    if (used_begin != dash || used_end != range.size() - dash - 1) return std::nullopt;
    return piece;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int64_t parse_int(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    const int64_t value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  BERTH_FAIL(what, " must be an integer, found '", text,
             "'. Fix: use a checkpoint written by berth (the file is damaged or from another tool)");
}

// A piece's state as a flat float32 CPU tensor of `numel` elements; undefined moments (no step taken yet)
// are Adam's initial zeros.
at::Tensor flat_state(const at::Tensor& tensor, int64_t numel, const std::string& what, bool required) {
  if (!tensor.defined()) {
    BERTH_CHECK(!required, "save_zero_shard: ", what,
                " is undefined. Fix: pass the fp32 master weights of every segment");
    return torch::zeros({numel}, torch::kFloat32);
  }
  BERTH_CHECK(tensor.numel() == numel, "save_zero_shard: ", what, " has ", tensor.numel(),
              " elements but its segment has ", numel, ". Fix: pass states[i] for segments[i]");
  return tensor.detach().reshape({numel}).to(torch::kCPU, torch::kFloat32).contiguous();
}

// --- Reading -------------------------------------------------------------------------------------------

struct SavedPiece {
  int64_t begin = 0;
  int64_t end = 0;
  size_t file = 0;  // index into Source::files
};

// A piece to fill: `out[k]` are the kinds' destination tensors of length end - begin.
struct Target {
  std::string name;
  int64_t begin = 0;
  int64_t end = 0;
};

class Source {
 public:
  virtual ~Source() = default;
  virtual int64_t step() const = 0;
  // Fills out[k] (1-D float32, end - begin elements) with kind kinds[k] of the target's elements.
  virtual void read(const Target& target, const std::vector<std::string>& kinds,
                    std::vector<at::Tensor>& out) = 0;
};

// ZeRO shards. Files are memory-mapped and only the tensors of pieces that overlap a wanted piece are copied
// out, one saved piece at a time: resuming reads about what the rank owns, not every rank's file.
class ShardSource final : public Source {
 public:
  explicit ShardSource(const std::string& checkpoint_dir)
      : dir_(checkpoint_dir), saved_(read_zero_layout(checkpoint_dir)) {
    const std::string expected_fingerprint = fingerprint(saved_.layout);
    files_.resize(saved_.rank_files.size());
    for (size_t r = 0; r < saved_.rank_files.size(); ++r) {
      const std::string path = (fs::path(zero_dir(dir_)) / saved_.rank_files[r]).string();
      if (!fs::exists(path)) {
        missing_.push_back(saved_.rank_files[r]);
        continue;
      }
      files_[r].emplace(io::SafetensorsFile::open(path));
      const io::SafetensorsFile& file = *files_[r];
      const auto& meta = file.metadata();
      auto get = [&](const std::string& key) {
        const auto it = meta.find(key);
        BERTH_CHECK(it != meta.end(), path, ": expected a berth ZeRO shard with metadata '", key,
                    "', found none. Fix: use a checkpoint written by berth (save_zero_shard)");
        return it->second;
      };
      BERTH_CHECK(get("format") == kShardFormat, path, ": expected format '", kShardFormat, "', found '",
                  get("format"), "'. Fix: use a checkpoint written by berth (save_zero_shard)");
      const int64_t rank = parse_int(get("rank"), path + ": metadata rank");
      const int64_t world = parse_int(get("world_size"), path + ": metadata world_size");
      const int64_t step = parse_int(get("step"), path + ": metadata step");
      BERTH_CHECK(rank == static_cast<int64_t>(r) && world == saved_.world_size, path, ": holds rank ", rank,
                  " of ", world, " but layout.json lists it as rank ", r, " of ", saved_.world_size,
                  ". Fix: do not rename shard files; copy the checkpoint directory as saved");
      BERTH_CHECK(get("layout_fingerprint") == expected_fingerprint && step == saved_.step, path,
                  ": was written by another save (step ", step, ", layout ", get("layout_fingerprint"),
                  ") than zero/layout.json (step ", saved_.step, ", layout ", expected_fingerprint,
                  "): the directory mixes files of two checkpoints. Fix: copy every rank's file of one save "
                  "into the checkpoint, or resume from another checkpoint");
      for (const std::string& name : file.names()) {
        const std::optional<PieceName> piece = parse_master_name(name);
        if (!piece) continue;
        const int64_t index = saved_.layout.index_of(piece->param);
        const int64_t numel = saved_.layout.entries[static_cast<size_t>(index)].numel;
        BERTH_CHECK(0 <= piece->begin && piece->begin < piece->end && piece->end <= numel, path, ": piece ",
                    name, " lies outside parameter '", piece->param, "' of ", numel,
                    " elements. Fix: use a checkpoint written by berth (the file is damaged)");
        for (const char* kind : kKinds) {
          const std::string tensor = piece_name(piece->param, piece->begin, piece->end, kind);
          BERTH_CHECK(file.contains(tensor), path, ": piece ", piece->param, " ",
                      range_text(piece->begin, piece->end), " lacks its ", kind,
                      " tensor. Fix: use a checkpoint written by berth (the file is damaged)");
          BERTH_CHECK(file.shape(tensor) == std::vector<int64_t>{piece->end - piece->begin}, path, ": ",
                      tensor, " has shape ", shape_text(file.shape(tensor)), ", expected [",
                      piece->end - piece->begin, "]. Fix: use a checkpoint written by berth (damaged file)");
        }
        pieces_[piece->param].push_back({piece->begin, piece->end, r});
      }
    }
    for (auto& [name, list] : pieces_)
      std::sort(list.begin(), list.end(),
                [](const SavedPiece& a, const SavedPiece& b) { return a.begin < b.begin; });
  }

  const ZeroCheckpointLayout& saved() const { return saved_; }
  int64_t step() const override { return saved_.step; }

  void read(const Target& target, const std::vector<std::string>& kinds,
            std::vector<at::Tensor>& out) override {
    int64_t covered = target.begin;
    const auto it = pieces_.find(target.name);
    if (it != pieces_.end()) {
      for (const SavedPiece& piece : it->second) {
        if (piece.end <= target.begin || piece.begin >= target.end) continue;
        if (piece.begin > covered) missing_range(target.name, covered, piece.begin);
        const int64_t lo = std::max(piece.begin, target.begin);
        const int64_t hi = std::min(piece.end, target.end);
        for (size_t k = 0; k < kinds.size(); ++k) {
          const at::Tensor saved = tensor(piece, target.name, kinds[k]);
          out[k].narrow(0, lo - target.begin, hi - lo).copy_(saved.narrow(0, lo - piece.begin, hi - lo));
        }
        covered = std::max(covered, hi);
      }
    }
    if (covered < target.end) missing_range(target.name, covered, target.end);
  }

 private:
  // The saved piece's tensor, kept until another piece is read: neighbouring wanted pieces often share a
  // saved one (a flat partition boundary inside a parameter).
  at::Tensor tensor(const SavedPiece& piece, const std::string& param, const std::string& kind) {
    const std::string piece_key =
        std::to_string(piece.file) + "|" + param + "/" + std::to_string(piece.begin);
    if (cache_key_ != piece_key) {
      cache_.clear();
      cache_key_ = piece_key;
    }
    const auto found = cache_.find(kind);
    if (found != cache_.end()) return found->second;
    at::Tensor value = files_[piece.file]
                           ->tensor(piece_name(param, piece.begin, piece.end, kind.c_str()))
                           .to(torch::kFloat32);
    cache_[kind] = value;
    return value;
  }

  [[noreturn]] void missing_range(const std::string& name, int64_t begin, int64_t end) const {
    const std::string what = "parameter '" + name + "' elements " + range_text(begin, end);
    if (!missing_.empty()) {
      std::string list;
      for (const std::string& file : missing_) list += (list.empty() ? "" : ", ") + ("zero/" + file);
      BERTH_FAIL(dir_, ": ", list, (missing_.size() == 1 ? " is" : " are"),
                 " missing: the checkpoint is incomplete (no rank file present holds ", what, "; ",
                 saved_.rank_files.size() - missing_.size(), " of ", saved_.rank_files.size(),
                 " rank files are there). Fix: copy every rank's file into ", zero_dir(dir_),
                 " (on several machines each rank writes its file on its own machine's disk), or resume from "
                 "a complete checkpoint");
    }
    BERTH_FAIL(dir_, ": no ZeRO shard holds ", what, " although all ", saved_.rank_files.size(),
               " rank files are there: the save was incomplete. Fix: resume from another checkpoint");
  }

  std::string dir_;
  ZeroCheckpointLayout saved_;
  std::vector<std::optional<io::SafetensorsFile>> files_;
  std::vector<std::string> missing_;
  std::map<std::string, std::vector<SavedPiece>> pieces_;
  std::string cache_key_;
  std::map<std::string, at::Tensor> cache_;
};

// A checkpoint of one process or DDP: model.safetensors (the weights, used as masters) and
// optimizer.safetensors (berth's AdamW file: "<name>.exp_avg", "<name>.exp_avg_sq", step.<name>).
class ReplicaSource final : public Source {
 public:
  ReplicaSource(const std::string& checkpoint_dir, bool need_optimizer) : dir_(checkpoint_dir) {
    const std::string model_path = (fs::path(dir_) / "model.safetensors").string();
    BERTH_CHECK(fs::exists(model_path), dir_,
                ": expected a checkpoint with zero/layout.json (ZeRO shards) or model.safetensors, found "
                "neither. Fix: pass a checkpoint directory (output_dir/checkpoint-<step>) written by berth");
    model_.emplace(io::SafetensorsFile::open(model_path));
    if (!need_optimizer) return;
    const std::string optimizer_path = (fs::path(dir_) / "optimizer.safetensors").string();
    BERTH_CHECK(fs::exists(optimizer_path), dir_,
                ": holds no optimizer state (neither zero/layout.json nor optimizer.safetensors). Fix: "
                "resume from a checkpoint the Trainer wrote, or start training afresh from this model");
    optimizer_.emplace(io::SafetensorsFile::open(optimizer_path));
    for (const auto& [key, value] : optimizer_->metadata()) {
      if (key.rfind("step.", 0) == 0) step_ = std::max(step_, parse_int(value, optimizer_path + ": " + key));
    }
  }

  // The checkpoint must hold every parameter of `layout` with its shape.
  void check(const FlatLayout& layout) const {
    for (const FlatEntry& entry : layout.entries) {
      BERTH_CHECK(model_->contains(entry.name), dir_, "/model.safetensors has no parameter '", entry.name,
                  "' (this model's first parameter the checkpoint lacks): it was saved from another model. "
                  "Fix: resume with the same model configuration that wrote the checkpoint");
      const std::vector<int64_t> shape = model_->shape(entry.name);
      BERTH_CHECK(shape == entry.shape, dir_, "/model.safetensors: parameter '", entry.name, "' has shape ",
                  shape_text(shape), " but this model's is ", shape_text(entry.shape),
                  ". Fix: resume with the same model configuration that wrote the checkpoint");
      if (!optimizer_) continue;
      for (const char* kind : {".exp_avg", ".exp_avg_sq"}) {
        if (!optimizer_->contains(entry.name + kind)) continue;
        const std::vector<int64_t> state_shape = optimizer_->shape(entry.name + kind);
        BERTH_CHECK(state_shape == entry.shape, dir_, "/optimizer.safetensors: ", entry.name, kind,
                    " has shape ", shape_text(state_shape), " but parameter '", entry.name, "' has ",
                    shape_text(entry.shape),
                    ". Fix: resume with the same model configuration that wrote the checkpoint");
      }
    }
  }

  std::vector<std::string> names() const { return model_->names(); }
  const io::SafetensorsFile& model() const { return *model_; }
  int64_t step() const override { return step_; }

  void read(const Target& target, const std::vector<std::string>& kinds,
            std::vector<at::Tensor>& out) override {
    for (size_t k = 0; k < kinds.size(); ++k) {
      at::Tensor full;
      if (kinds[k] == "master") {
        full = model_->tensor(target.name);
      } else if (optimizer_ && optimizer_->contains(target.name + "." + kinds[k])) {
        full = optimizer_->tensor(target.name + "." + kinds[k]);
      } else {
        out[k].zero_();  // no state yet for this parameter: Adam's initial zeros
        continue;
      }
      out[k].copy_(full.reshape({-1}).narrow(0, target.begin, target.end - target.begin));
    }
  }

 private:
  std::string dir_;
  std::optional<io::SafetensorsFile> model_;
  std::optional<io::SafetensorsFile> optimizer_;
  int64_t step_ = 0;
};

// The saved layout must hold the same parameters (by name, with the same shapes) as `layout`.
void check_same_parameters(const std::string& checkpoint_dir, const FlatLayout& saved,
                           const FlatLayout& layout) {
  const std::string fix =
      ". Fix: resume with the same model configuration (and the same frozen parameters) that wrote the "
      "checkpoint";
  for (const FlatEntry& entry : layout.entries) {
    const auto it = std::find_if(saved.entries.begin(), saved.entries.end(),
                                 [&](const FlatEntry& e) { return e.name == entry.name; });
    BERTH_CHECK(it != saved.entries.end(), checkpoint_dir, "/zero/layout.json has no parameter '", entry.name,
                "' (this model's first parameter the checkpoint lacks; it holds ", saved.entries.size(),
                " parameters, this model trains ", layout.entries.size(), ")", fix);
    BERTH_CHECK(it->shape == entry.shape, checkpoint_dir, "/zero/layout.json: parameter '", entry.name,
                "' has shape ", shape_text(it->shape), " in the checkpoint but ", shape_text(entry.shape),
                " in this model", fix);
  }
  for (const FlatEntry& entry : saved.entries) {
    const auto it = std::find_if(layout.entries.begin(), layout.entries.end(),
                                 [&](const FlatEntry& e) { return e.name == entry.name; });
    BERTH_CHECK(it != layout.entries.end(), checkpoint_dir, "/zero/layout.json has parameter '", entry.name,
                "' that this model does not train (the checkpoint holds ", saved.entries.size(),
                " parameters, this model trains ", layout.entries.size(), ")", fix);
  }
}

// The shard file's tensors: each segment's master, exp_avg and exp_avg_sq under its piece's name.
std::map<std::string, at::Tensor> shard_tensors(const FlatLayout& layout,
                                                const std::vector<ParamSegment>& segments,
                                                const std::vector<SegmentState>& states) {
  std::map<std::string, at::Tensor> tensors;
  for (size_t i = 0; i < segments.size(); ++i) {
    const ParamSegment& segment = segments[i];
    // The segments come from this layout (segments_in, per_parameter_partition): one outside it is a bug.
    BERTH_BUG(segment.param >= 0 && segment.param < static_cast<int64_t>(layout.entries.size()),
              "save_zero_shard: segment ", i, " names parameter ", segment.param, " but the layout has ",
              layout.entries.size(), "; every segment must be a piece of the layout it is saved with");
    const FlatEntry& entry = layout.entries[static_cast<size_t>(segment.param)];
    BERTH_BUG(0 <= segment.begin && segment.begin <= segment.end && segment.end <= entry.numel,
              "save_zero_shard: segment ", range_text(segment.begin, segment.end), " of parameter '",
              entry.name, "' lies outside its ", entry.numel,
              " elements; every segment must be a piece of the layout it is saved with");
    if (segment.numel() == 0) continue;
    const SegmentState& state = states[i];
    const std::string what = "parameter '" + entry.name + "' " + range_text(segment.begin, segment.end);
    const std::string master = piece_name(entry.name, segment.begin, segment.end, "master");
    BERTH_CHECK(tensors.count(master) == 0, "save_zero_shard: ", what,
                " is given twice. Fix: pass each owned segment once");
    tensors[master] = flat_state(state.master, segment.numel(), what + " master", true);
    tensors[piece_name(entry.name, segment.begin, segment.end, "exp_avg")] =
        flat_state(state.exp_avg, segment.numel(), what + " exp_avg", false);
    tensors[piece_name(entry.name, segment.begin, segment.end, "exp_avg_sq")] =
        flat_state(state.exp_avg_sq, segment.numel(), what + " exp_avg_sq", false);
  }
  return tensors;
}

// checkpoint_dir/zero/layout.json, written by rank 0.
void write_layout_file(const std::string& checkpoint_dir, const FlatLayout& layout,
                       const ZeroShardInfo& info) {
  nlohmann::ordered_json json;
  json["format"] = kLayoutFormat;
  json["version"] = kVersion;
  json["world_size"] = info.world_size;
  json["stage"] = info.stage;
  json["step"] = info.step;
  json["numel"] = layout.numel;
  json["layout_fingerprint"] = fingerprint(layout);
  json["rank_files"] = nlohmann::ordered_json::array();
  for (int64_t r = 0; r < info.world_size; ++r)
    json["rank_files"].push_back(zero_shard_file_name(r, info.world_size));
  json["parameters"] = nlohmann::ordered_json::array();
  for (const FlatEntry& entry : layout.entries) {
    json["parameters"].push_back(
        {{"name", entry.name}, {"shape", entry.shape}, {"numel", entry.numel}, {"offset", entry.offset}});
  }
  write_file_atomically(layout_path(checkpoint_dir), json.dump(2) + "\n");
}

}  // namespace

std::string zero_shard_file_name(int64_t rank, int64_t world_size) {
  return "rank_" + std::to_string(rank) + "_of_" + std::to_string(world_size) + ".safetensors";
}

void save_zero_shard(const std::string& checkpoint_dir, const FlatLayout& layout, const ZeroShardInfo& info,
                     const std::vector<ParamSegment>& segments, const std::vector<SegmentState>& states) {
  BERTH_CHECK(info.world_size >= 1 && info.rank >= 0 && info.rank < info.world_size, "save_zero_shard: rank ",
              info.rank, " is outside world size ", info.world_size,
              ". Fix: pass the process group's rank and size");
  BERTH_CHECK(info.stage >= 1 && info.stage <= 3, "save_zero_shard: ZeRO stage must be 1, 2 or 3, found ",
              info.stage);
  BERTH_CHECK(info.step >= 0, "save_zero_shard: step must be >= 0, found ", info.step);
  BERTH_CHECK(segments.size() == states.size(), "save_zero_shard: ", segments.size(), " segments but ",
              states.size(), " states. Fix: pass one SegmentState per segment");
  const std::map<std::string, at::Tensor> tensors = shard_tensors(layout, segments, states);
  const std::string dir = zero_dir(checkpoint_dir);
  std::error_code error;
  fs::create_directories(dir, error);
  BERTH_CHECK(!error, "save_zero_shard: cannot create ", dir, ": ", error.message(),
              ". Fix: check that the checkpoint directory is writable");
  const std::map<std::string, std::string> metadata{{"format", kShardFormat},
                                                    {"version", std::to_string(kVersion)},
                                                    {"rank", std::to_string(info.rank)},
                                                    {"world_size", std::to_string(info.world_size)},
                                                    {"stage", std::to_string(info.stage)},
                                                    {"step", std::to_string(info.step)},
                                                    {"layout_fingerprint", fingerprint(layout)}};
  io::save_safetensors((fs::path(dir) / zero_shard_file_name(info.rank, info.world_size)).string(), tensors,
                       metadata);
  if (info.rank == 0) write_layout_file(checkpoint_dir, layout, info);
}

bool has_zero_shards(const std::string& checkpoint_dir) {
  std::error_code error;
  return fs::is_regular_file(layout_path(checkpoint_dir), error);
}

ZeroCheckpointLayout read_zero_layout(const std::string& checkpoint_dir) {
  const std::string path = layout_path(checkpoint_dir);
  std::ifstream in(path);
  BERTH_CHECK(in.good(), path, ": cannot read it (", (fs::exists(path) ? "unreadable" : "no such file"),
              "). Fix: pass a checkpoint directory written with ZeRO (it has zero/layout.json)");
  const std::string fix =
      ". Fix: use a checkpoint written by berth (the file is damaged or from another tool)";
  ZeroCheckpointLayout result;
  try {
    const nlohmann::json json = nlohmann::json::parse(in);
    BERTH_CHECK(json.value("format", std::string()) == kLayoutFormat, path, ": expected format '",
                kLayoutFormat, "', found '", json.value("format", std::string()), "'", fix);
    BERTH_CHECK(json.at("version").get<int>() == kVersion, path, ": expected version ", kVersion, ", found ",
                json.at("version").dump(), ". Fix: use the berth version that wrote this checkpoint");
    result.world_size = json.at("world_size").get<int64_t>();
    result.stage = json.at("stage").get<int>();
    result.step = json.at("step").get<int64_t>();
    BERTH_CHECK(result.world_size >= 1 && result.stage >= 1 && result.stage <= 3 && result.step >= 0, path,
                ": world_size ", result.world_size, ", stage ", result.stage, ", step ", result.step,
                " are out of range", fix);
    for (const auto& file : json.at("rank_files")) result.rank_files.push_back(file.get<std::string>());
    BERTH_CHECK(static_cast<int64_t>(result.rank_files.size()) == result.world_size, path, ": lists ",
                result.rank_files.size(), " rank files for world size ", result.world_size, fix);
    for (const auto& param : json.at("parameters")) {
      FlatEntry entry;
      entry.name = param.at("name").get<std::string>();
      entry.shape = param.at("shape").get<std::vector<int64_t>>();
      entry.numel = param.at("numel").get<int64_t>();
      entry.offset = param.at("offset").get<int64_t>();
      // Checked: a hostile shape such as [2^32, 2^32] would wrap the product (undefined behaviour) to 0.
      int64_t product = 1;
      bool fits = true;
      for (const int64_t d : entry.shape)
        fits = fits && d >= 0 && !__builtin_mul_overflow(product, d, &product);
      BERTH_CHECK(fits && product == entry.numel && entry.offset == result.layout.numel, path,
                  ": parameter '", entry.name, "' has shape ", shape_text(entry.shape), ", numel ",
                  entry.numel, " and offset ", entry.offset, ", which do not fit together", fix);
      result.layout.numel += entry.numel;
      result.layout.entries.push_back(std::move(entry));
    }
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL(path, ": not a valid ZeRO layout (", e.what(), ")", fix);
  }
  return result;
}

std::vector<SegmentState> load_zero_segments(const std::string& checkpoint_dir, const FlatLayout& layout,
                                             const std::vector<ParamSegment>& wanted, int64_t* step) {
  std::unique_ptr<Source> source;
  if (has_zero_shards(checkpoint_dir)) {
    auto shards = std::make_unique<ShardSource>(checkpoint_dir);
    check_same_parameters(checkpoint_dir, shards->saved().layout, layout);
    source = std::move(shards);
  } else {
    auto replica = std::make_unique<ReplicaSource>(checkpoint_dir, true);
    replica->check(layout);
    source = std::move(replica);
  }
  const std::vector<std::string> kinds(std::begin(kKinds), std::end(kKinds));
  std::vector<SegmentState> states;
  states.reserve(wanted.size());
  for (const ParamSegment& segment : wanted) {
    BERTH_CHECK(segment.param >= 0 && segment.param < static_cast<int64_t>(layout.entries.size()),
                "load_zero_segments: a wanted segment names parameter ", segment.param,
                " but the layout has ", layout.entries.size());
    const FlatEntry& entry = layout.entries[static_cast<size_t>(segment.param)];
    BERTH_CHECK(0 <= segment.begin && segment.begin <= segment.end && segment.end <= entry.numel,
                "load_zero_segments: wanted segment ", range_text(segment.begin, segment.end),
                " of parameter '", entry.name, "' lies outside its ", entry.numel, " elements");
    std::vector<at::Tensor> out;
    for (size_t k = 0; k < kinds.size(); ++k) out.push_back(torch::empty({segment.numel()}, torch::kFloat32));
    if (segment.numel() > 0) source->read({entry.name, segment.begin, segment.end}, kinds, out);
    states.push_back(SegmentState{out[0], out[1], out[2]});
  }
  if (step) *step = source->step();
  return states;
}

std::map<std::string, at::Tensor> consolidate_parameters(const std::string& checkpoint_dir) {
  std::map<std::string, at::Tensor> params;
  if (has_zero_shards(checkpoint_dir)) {
    ShardSource shards(checkpoint_dir);
    for (const FlatEntry& entry : shards.saved().layout.entries) {
      std::vector<at::Tensor> out{torch::empty({entry.numel}, torch::kFloat32)};
      if (entry.numel > 0) shards.read({entry.name, 0, entry.numel}, {"master"}, out);
      params[entry.name] = out[0].reshape(entry.shape);
    }
    return params;
  }
  ReplicaSource replica(checkpoint_dir, false);
  for (const std::string& name : replica.names()) {
    at::Tensor tensor = replica.model().tensor(name);
    params[name] = tensor.is_floating_point() ? tensor.to(torch::kFloat32) : tensor;
  }
  return params;
}

}  // namespace berth::dist
