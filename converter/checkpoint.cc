#include "converter/checkpoint.h"

#include "converter/json_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace patchfuse {

using nlohmann::json;

static bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
static bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
// Where a symbolic link at `p` points when its target does not exist (a Hugging Face hub
// snapshot's file whose blob is missing), else "".
static std::string dangling_link(const std::string& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode) || ::stat(p.c_str(), &st) == 0) return "";
  std::string target(4096, '\0');
  const ssize_t n = ::readlink(p.c_str(), target.data(), target.size());
  return n > 0 ? target.substr(0, static_cast<size_t>(n)) : std::string("?");
}
// Names in `dir` that start with `prefix`, sorted, for a hint.
static std::string names_in(const std::string& dir, const std::string& prefix) {
  std::set<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0 && n != "." && n != "..") names.insert(n);
    }
    ::closedir(d);
  }
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}
static std::string dirname_of(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash == 0 ? 1 : slash);
}

Result<Checkpoint> Checkpoint::open(const std::string& input, const std::string& config_override) {
  Checkpoint c;
  std::string dir, single;
  if (is_dir(input)) {
    dir = input;
    if (is_file(dir + "/model.safetensors.index.json")) {
      c.index_path_ = dir + "/model.safetensors.index.json";
    } else if (is_file(dir + "/model.safetensors")) {
      single = dir + "/model.safetensors";
    } else {
      // Hugging Face's hub cache: models--ORG--NAME/{blobs, refs, snapshots/<revision>/...}, the
      // snapshot's files links into blobs/.
      for (const char* name : {"model.safetensors.index.json", "model.safetensors"}) {
        const std::string target = dangling_link(dir + "/" + name);
        PF_CHECK(target.empty(), Code::kIoError, dir, "/", name, " is a link to ", target,
                 ", which does not exist (a hub snapshot whose blob was not downloaded?)");
      }
      PF_CHECK(!is_dir(dir + "/snapshots"), Code::kInvalidArgument, input,
               ": a Hugging Face hub cache entry; pass one of its snapshots/<revision> folders (here: ",
               names_in(dir + "/snapshots", ""), ")");
      PF_CHECK(names_in(dir, "models--") == "none", Code::kInvalidArgument, input,
               ": a Hugging Face hub cache; pass models--ORG--NAME/snapshots/<revision> (models here: ",
               names_in(dir, "models--"), ")");
      return make_error(Code::kInvalidArgument, cat(input, ": folder has neither model.safetensors nor ",
                                                    "model.safetensors.index.json"));
    }
  } else if (is_file(input) && ends_with(input, ".index.json")) {
    dir = dirname_of(input);
    c.index_path_ = input;
  } else if (is_file(input) && ends_with(input, ".safetensors")) {
    dir = dirname_of(input);
    single = input;
  } else {
    return make_error(Code::kInvalidArgument,
                      cat(input, ": not a folder, a .safetensors file or a .safetensors.index.json file"));
  }
  c.config_path_ = config_override.empty() ? dir + "/config.json" : config_override;

  if (!single.empty()) {
    PF_ASSIGN_OR_RETURN(SafetensorsFile st, SafetensorsFile::open(single));
    for (const SafetensorsEntry& e : st.entries()) c.location_[e.name] = single;
    c.open_[single] = std::make_unique<SafetensorsFile>(std::move(st));
    return c;
  }
  PF_ASSIGN_OR_RETURN(json index, load_json_object(c.index_path_, "the shard index"));
  PF_CHECK(index.contains("weight_map") && index["weight_map"].is_object(), Code::kInvalidModel, c.index_path_,
           ": 'weight_map' must be an object of tensor name -> shard file");
  for (const auto& [name, file] : index["weight_map"].items()) {
    PF_CHECK(file.is_string(), Code::kInvalidModel, c.index_path_, ": weight_map['", name,
             "'] must be a file name, got ", file.dump());
    const std::string f = file.get<std::string>();
    // Shards live beside the index; a path that could leave the folder is refused.
    PF_CHECK(!f.empty() && f.find('/') == std::string::npos && f != "." && f != "..", Code::kInvalidModel,
             c.index_path_, ": weight_map['", name, "'] = '", f, "' must be a plain file name in the same folder");
    c.location_[name] = dir + "/" + f;
  }
  return c;
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [name, file] : location_) names.push_back(name);
  return names;
}

std::vector<std::string> Checkpoint::files() const {
  std::set<std::string> files = {config_path_};
  if (!index_path_.empty()) files.insert(index_path_);
  for (const auto& [name, file] : location_) files.insert(file);
  return std::vector<std::string>(files.begin(), files.end());
}

Result<SafetensorsFile*> Checkpoint::shard(const std::string& file) {
  auto it = open_.find(file);
  if (it == open_.end()) {
    PF_ASSIGN_OR_RETURN(SafetensorsFile st, SafetensorsFile::open(file));
    it = open_.emplace(file, std::make_unique<SafetensorsFile>(std::move(st))).first;
  }
  return it->second.get();
}

Result<CheckpointTensor> Checkpoint::tensor(const std::string& name) {
  auto loc = location_.find(name);
  PF_CHECK(loc != location_.end(), Code::kInvalidModel, "checkpoint has no tensor ", name);
  PF_ASSIGN_OR_RETURN(SafetensorsFile * st, shard(loc->second));
  const SafetensorsEntry* e = st->find(name);
  PF_CHECK(e != nullptr, Code::kInvalidModel, index_path_, ": weight_map puts ", name, " in ", loc->second,
           ", but that shard has no such tensor");
  return CheckpointTensor{e, st->data(*e), &loc->second};
}

// Reads one checkpoint tensor as `to`; notes when the conversion changed any value.
Result<TensorRecord> read_tensor(Checkpoint& ckpt, const std::string& name, const std::string& new_name,
                                 std::vector<int64_t> new_shape, std::optional<DType> to,
                                 std::vector<std::string>& notes) {
  PF_ASSIGN_OR_RETURN(CheckpointTensor t, ckpt.tensor(name));
  const auto from = dtype_from_name(t.entry->dtype);
  PF_CHECK(from.has_value(), Code::kUnsupported, *t.file, ": tensor ", name, " has dtype ", t.entry->dtype,
           "; patch-embedding weights must be F32, F16 or BF16");
  TensorRecord r;
  r.name = new_name;
  r.shape = std::move(new_shape);
  r.dtype = to.value_or(*from);
  const size_t count = (t.entry->end - t.entry->begin) / dtype_size(*from);
  r.bytes.resize(count * dtype_size(r.dtype));
  const size_t changed = convert_elements(t.data, *from, r.bytes.data(), r.dtype, count);
  if (*from != r.dtype) {
    notes.push_back(changed == 0 ? cat(name, ": ", dtype_name(*from), " -> ", dtype_name(r.dtype), " is exact")
                                 : cat(name, ": ", dtype_name(*from), " -> ", dtype_name(r.dtype), " is lossy: ",
                                       changed, " of ", count, " values rounded"));
  }
  return r;
}

}  // namespace patchfuse
