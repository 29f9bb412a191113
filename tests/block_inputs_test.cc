// The block inputs against PyTorch: each fixture of tests/fixtures/block_inputs (transformers'
// rot_pos_emb, cu_seqlens, get_window_index, Pixtral's rotary and position ids, Idefics3's
// bucketized ids, transcribed in PyTorch by make_block_inputs.py) is converted with the converter
// library, and every case's tensors are asked of a session through the C++ API: names and order,
// dtypes and shapes, integers equal, floats within 1e-5. Then the schedule, the converter's
// checks of the config fields, the errors, and the 2026 towers end to end.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>

#include "converter/convert.h"
#include "converter/sample_checkpoint.h"
#include "patchfuse/patchfuse.hpp"
#include "runtime/model/model_view.h"
#include "tests/support/convert_fixture.h"
#include "tests/support/model_builder.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

std::string fixture(const std::string& name) { return std::string(PATCHFUSE_BLOCK_INPUTS_DIR) + "/" + name; }


Session session(const Model& model, pf_precision precision = PF_PRECISION_F32,
                pf_output_stage stage = PF_OUTPUT_PATCHES) {
  pf_session_options o = default_options();
  o.backend = PF_BACKEND_REFERENCE;
  o.precision = precision;
  o.output_stage = stage;
  auto s = Session::create(model, 0, o);
  EXPECT_TRUE(s) << s.error();
  return std::move(*s);
}

// A .npy of the generator's (numpy 1.x, format 1.0, C order): its descr, shape and data bytes.
// cli/npy.h reads float and uint8 inputs only; the block inputs include int32 and int64.
struct Npy {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
Npy read_any_npy(const std::string& path) {
  const std::vector<uint8_t> file = testing::read_bytes(path);
  EXPECT_GE(file.size(), 10u) << path;
  if (file.size() < 10) return {};
  const size_t header_len = file[8] | (file[9] << 8);
  const std::string header(file.begin() + 10, file.begin() + 10 + static_cast<std::ptrdiff_t>(header_len));
  Npy n;
  const size_t d = header.find("'descr': '") + 10;
  n.descr = header.substr(d, header.find('\'', d) - d);
  const size_t open = header.find("'shape': (") + 10;
  std::string dims = header.substr(open, header.find(')', open) - open);
  for (size_t at = 0; at < dims.size();) {
    const size_t comma = dims.find(',', at);
    const std::string item = dims.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (item.find_first_of("0123456789") != std::string::npos) n.shape.push_back(std::stoll(item));
    at = comma == std::string::npos ? dims.size() : comma + 1;
  }
  n.bytes.assign(file.begin() + 10 + static_cast<std::ptrdiff_t>(header_len), file.end());
  return n;
}

const char* npy_descr(pf_element_type t) {
  return t == PF_ELEMENT_F32 ? "<f4" : t == PF_ELEMENT_I32 ? "<i4" : "<i8";
}

// The bound for the tables: cos/sin within 1e-5 absolute of PyTorch's (the angles are the
// same float32 products; cos and sin of them differ by the libraries' last bit).
constexpr double kTableBound = 1e-5;

class BlockInputs : public ::testing::TestWithParam<const char*> {};

// A block input's bytes for a grid, from a session (nullptr: none).
using Fetch = std::function<std::string(const pf_block_input_info&, const pf_grid&, uint8_t*)>;

void expect_matches(const std::string& dir, const std::string& name, const pf_grid& grid,
                    const std::vector<pf_block_input_info>& infos, const std::vector<std::string>& want_names,
                    const Fetch& fetch) {
  std::vector<std::string> names;
  for (const pf_block_input_info& b : infos) names.emplace_back(b.name);
  EXPECT_EQ(names, want_names);
  for (const pf_block_input_info& b : infos) {
    SCOPED_TRACE(b.name);
    const Npy want = read_any_npy(dir + "/" + name + "." + b.name + ".npy");
    EXPECT_EQ(want.descr, npy_descr(b.type));
    EXPECT_EQ(std::vector<int64_t>(b.shape, b.shape + b.rank), want.shape);
    ASSERT_EQ(b.bytes, want.bytes.size());
    std::vector<uint8_t> got(b.bytes + 8, 0xAB);  // a guard byte run after the tensor
    ASSERT_EQ(fetch(b, grid, got.data()), "");
    for (size_t i = b.bytes; i < got.size(); ++i) ASSERT_EQ(got[i], 0xAB) << "written past its bytes";
    if (b.type != PF_ELEMENT_F32) {
      EXPECT_EQ(std::memcmp(got.data(), want.bytes.data(), b.bytes), 0) << "integers must be equal";
      continue;
    }
    double worst = 0;
    for (size_t i = 0; i < b.bytes / 4; ++i) {
      float g = 0, w = 0;
      std::memcpy(&g, got.data() + 4 * i, 4);
      std::memcpy(&w, want.bytes.data() + 4 * i, 4);
      worst = std::max(worst, std::fabs(static_cast<double>(g) - w));
    }
    EXPECT_LE(worst, kTableBound) << "max |cos/sin - torch|";
  }
}

// A session of `precision` on any backend that has it, or nullopt (bf16 needs AVX512-BF16 or AMX).
std::optional<Session> any_session(const Model& model, pf_precision precision) {
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
    pf_session_options o = default_options();
    o.backend = b;
    o.precision = precision;
    auto s = Session::create(model, 0, o);
    if (s) return std::move(*s);
  }
  return std::nullopt;
}

TEST_P(BlockInputs, EveryCaseMatchesPytorch) {
  const std::string dir = fixture(GetParam());
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(dir, tmp / "m.pfb");
  // The runtime's own functions, for the precisions no backend of this CPU runs (bf16 on AVX2):
  // the session's precision only picks the dtype they round to.
  const std::vector<uint8_t> file = testing::read_bytes(tmp / "m.pfb");
  auto view = read_model(file.data(), file.size(), "m.pfb");
  ASSERT_TRUE(view.ok());
  const ModuleView& m = view->modules[0];
  ASSERT_TRUE(m.blocks && m.encoder_input);
  nlohmann::json cases;
  std::ifstream(dir + "/cases.json") >> cases;
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const pf_grid grid{c["grid"][0], c["grid"][1], c["grid"][2]};
    const bool bf16 = c["precision"] == "bf16";
    const auto names = c["tensors"].get<std::vector<std::string>>();
    std::optional<Session> s = any_session(model, bf16 ? PF_PRECISION_BF16 : PF_PRECISION_F32);
    if (s) {
      auto infos = s->block_inputs(grid);
      ASSERT_TRUE(infos) << infos.error();
      expect_matches(dir, name, grid, *infos, names, [&](const pf_block_input_info& b, const pf_grid& g, uint8_t* out) {
        return s->block_input(b.name, g, out, b.bytes);
      });
    }
    const DType dtype = bf16 ? DType::kBF16 : DType::kF32;
    const FrameGrid fg{grid.t, grid.h, grid.w};
    auto descs = block_inputs(*m.blocks, *m.encoder_input, fg);
    ASSERT_TRUE(descs.ok());
    auto tables = make_block_tables(*m.blocks, *m.encoder_input, grid.h, grid.w, dtype);
    ASSERT_TRUE(tables.ok());
    std::vector<pf_block_input_info> infos;
    for (const BlockInputDesc& d : *descs) {
      pf_block_input_info i{d.name, static_cast<pf_element_type>(d.type), static_cast<int32_t>(d.shape.size()), {}, d.bytes()};
      std::copy(d.shape.begin(), d.shape.end(), i.shape);
      infos.push_back(i);
    }
    expect_matches(dir, name, grid, infos, names, [&](const pf_block_input_info& b, const pf_grid&, uint8_t* out) {
      Status st = fill_block_input(*m.blocks, *m.encoder_input, *tables, b.name, fg, dtype, out, b.bytes);
      return st.ok() ? std::string() : st.error().message;
    });
  }
}

INSTANTIATE_TEST_SUITE_P(PytorchFixtures, BlockInputs,
                         ::testing::Values("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5", "glm_ocr", "glm46v", "pixtral",
                                           "idefics3"));

// The schedule as config.json gives it, and the tensors of an encoder-input session (its tables
// made by prepare) equal to a patches session's.
TEST(BlockInputsSchedule, ConfigValuesAndEveryStageAgree) {
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(fixture("qwen2_5_vl"), tmp / "m.pfb");
  Session s = session(model);
  auto b = s.block_schedule();
  ASSERT_TRUE(b) << b.error();
  EXPECT_EQ(b->depth, 4);
  EXPECT_EQ(b->num_heads, 2);
  EXPECT_EQ(b->head_dim, 16);
  EXPECT_EQ(b->rope_theta, 10000.0);
  EXPECT_STREQ(b->rotary, "vision_2d");
  EXPECT_NE(std::string(b->description).find("full attention (cu_seqlens) at blocks 1, 3"), std::string::npos) << b->description;
  const pf_grid grid{1, 12, 20};
  Session e = session(model, PF_PRECISION_F32, PF_OUTPUT_ENCODER_INPUT);
  pf_input_shape shape{};
  shape.kind = PF_INPUT_PIXEL_VALUES;
  shape.grid = grid;
  ASSERT_EQ(e.prepare(shape), "");
  std::vector<float> a(240 * 16), c(240 * 16);
  ASSERT_EQ(s.block_input("rotary_sin", grid, a.data(), a.size() * 4), "");
  ASSERT_EQ(e.block_input("rotary_sin", grid, c.data(), c.size() * 4), "");
  EXPECT_EQ(a, c);
}

TEST(BlockInputsErrors, NamesGridsBuffersAndOlderModels) {
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(fixture("qwen3_vl"), tmp / "m.pfb");
  Session s = session(model);
  std::vector<uint8_t> buf(4096);
  const pf_grid grid{1, 4, 4};
  std::string err = s.block_input("window_index", grid, buf.data(), buf.size());
  EXPECT_NE(err.find("block input 'window_index': this model's blocks take rotary_cos, rotary_sin, cu_seqlens, "
                     "deepstack_visual_indexes"),
            std::string::npos)
      << err;
  err = s.block_input("rotary_cos", grid, buf.data(), 100);
  EXPECT_NE(err.find("takes 1024 bytes; the buffer has 100"), std::string::npos) << err;
  err = s.block_input("cu_seqlens", pf_grid{1, 5, 4}, buf.data(), buf.size());
  EXPECT_NE(err.find("h and w must be multiples of the merge size 2"), std::string::npos) << err;
  EXPECT_EQ(pf_session_block_input(s.get(), nullptr, &grid, buf.data(), buf.size()), PF_INVALID_ARGUMENT);
  pf_block_input_info info{};
  EXPECT_EQ(pf_session_block_input_info(s.get(), &grid, 4, &info), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("index 4 is past the 4 block inputs"), std::string::npos);

  // Pixtral's table ends at image_size / patch_size patches a side.
  const Model pixtral = testing::convert_fixture_dir(fixture("pixtral"), tmp / "p.pfb");
  Session p = session(pixtral);
  EXPECT_EQ(p.block_inputs(pf_grid{1, 9, 2}).status(), PF_INVALID_ARGUMENT);
  EXPECT_NE(p.block_inputs(pf_grid{1, 9, 2}).error().find("image_size / patch_size = 8"), std::string::npos);

  // SigLIP's blocks take the hidden states only: an empty list, and a name says so.
  SampleSpec spec;
  spec.arch = find_architecture("siglip");
  spec.embed_dim = 16;
  ASSERT_TRUE(write_sample_checkpoint(tmp / "siglip", spec).ok());
  const Model siglip = testing::convert_fixture_dir(tmp / "siglip", tmp / "s.pfb");
  Session g = session(siglip);
  auto none = g.block_inputs(pf_grid{1, 4, 4});
  ASSERT_TRUE(none) << none.error();
  EXPECT_TRUE(none->empty());
  EXPECT_NE(g.block_input("rotary_cos", pf_grid{1, 4, 4}, buf.data(), buf.size()).find("the hidden states only"),
            std::string::npos);

  // A model written before the schedule was stored.
  testing::TestModule old;
  old.embed_dim = 24;
  const std::vector<uint8_t> bytes = testing::make_model(old, 7);
  auto m = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(m) << m.error();
  Session o = session(*m);
  EXPECT_EQ(o.block_inputs(grid).status(), PF_UNSUPPORTED);
  EXPECT_NE(o.block_inputs(grid).error().find("convert the checkpoint again"), std::string::npos);
  EXPECT_EQ(o.block_schedule().status(), PF_UNSUPPORTED);
}

// The converter's one-line errors for the fields the blocks read, and a default head count that
// does not fit the checkpoint's width: converted, with a note, and the block inputs say why not.
// A size query answers without making the order (2^30 merge groups here, 16 GB of indexes), and
// a block input's name and buffer are refused before the grid's tables are made (2 GB of rotary
// tables here): the resident set hardly grows.
TEST(BlockInputsErrors, SizeQueriesAndRefusalsOfLargeGridsAllocateNothing) {
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(fixture("qwen2_5_vl"), tmp / "m.pfb");
  auto s = Session::create(model, 0, default_options());
  ASSERT_TRUE(s);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const pf_grid largest{1 << 20, 64, 64};  // 2^32 patches: the window order's bound
  size_t groups = 0, bounds = 0;
  ASSERT_EQ(pf_session_window_index(s->get(), &largest, nullptr, nullptr, 0, nullptr, 0, &groups, &bounds), PF_OK)
      << pf_last_error();
  EXPECT_EQ(groups, size_t{1} << 30);
  EXPECT_EQ(bounds, (size_t{1} << 26) + 1);  // 8 x 8 windows of 4 x 4 groups (32 px) a frame, and the leading 0
  std::vector<int64_t> cu(16);
  EXPECT_EQ(pf_session_window_index(s->get(), &largest, nullptr, nullptr, 0, cu.data(), cu.size(), &groups, &bounds),
            PF_INVALID_ARGUMENT);
  const pf_grid large{1, 4096, 4096};
  uint8_t byte = 0;
  EXPECT_EQ(pf_session_block_input(s->get(), "rotary_cos", &large, &byte, 1), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("takes 1073741824 bytes; the buffer has 1"), std::string::npos)
      << pf_last_error();
  EXPECT_EQ(pf_session_block_input(s->get(), "no_such_input", &large, &byte, 1), PF_INVALID_ARGUMENT);
  getrusage(RUSAGE_SELF, &after);
  if (!testing::kSanitized) {
    EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB of peak resident set";
  }
}

TEST(BlockInputsConfig, FieldsAreChecked) {
  testing::TempDir tmp;
  const auto with_vision = [&](const std::string& name, const nlohmann::json& patch) {
    const std::string dir = tmp / name;
    ::mkdir(dir.c_str(), 0777);
    testing::write_bytes(dir + "/model.safetensors", testing::read_bytes(fixture("qwen2_5_vl/model.safetensors")));
    nlohmann::json config;
    std::ifstream(fixture("qwen2_5_vl/config.json")) >> config;
    for (auto& [k, v] : patch.items()) {
      if (v.is_null()) {
        config["vision_config"].erase(k);
      } else {
        config["vision_config"][k] = v;
      }
    }
    std::ofstream(dir + "/config.json") << config.dump();
    ConvertOptions o;
    o.input = dir;
    o.output = tmp / (name + ".pfb");
    o.fusion.push_back({"patch_embeddings", FusionValue{}});
    return convert_checkpoint(o);
  };
  auto r = with_vision("past", {{"fullatt_block_indexes", {1, 4}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("config.json: vision_config.fullatt_block_indexes 4 must be a block number below depth 4"),
            std::string::npos)
      << r.error().message;
  r = with_vision("order", {{"fullatt_block_indexes", {3, 1}}});
  ASSERT_FALSE(r.ok());
  r = with_vision("text", {{"fullatt_block_indexes", "7,15"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("fullatt_block_indexes must be a list of block numbers"), std::string::npos)
      << r.error().message;
  r = with_vision("heads", {{"num_heads", 3}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("vision_config.num_heads 3 of the patch embedding's width 32 give no rotary head_dim"),
            std::string::npos)
      << r.error().message;
  EXPECT_FALSE(std::ifstream(tmp / "heads.pfb").good()) << "no output file on an error";
  r = with_vision("default", {{"num_heads", nullptr}});  // the default 16 heads of 32 are 2 wide
  ASSERT_TRUE(r.ok()) << r.error().message;
  bool noted = false;
  for (const std::string& n : r->notes) noted |= n.find("block inputs not stored") != std::string::npos;
  EXPECT_TRUE(noted);
  auto model = Model::open_file(tmp / "default.pfb");
  ASSERT_TRUE(model);
  Session s = session(*model);
  EXPECT_EQ(s.block_inputs(pf_grid{1, 4, 4}).status(), PF_UNSUPPORTED);
  EXPECT_NE(s.block_inputs(pf_grid{1, 4, 4}).error().find("gives no vision_config.num_heads"), std::string::npos);
}

// The 2026 towers convert from checkpoints shaped like the released ones, take camera frames
// through their processors and give the encoder input and the block inputs of the run's grid.
TEST(BlockInputsTowers, Qwen35GlmOcrAndGlm46vEndToEnd) {
  for (const char* type : {"qwen3_5", "qwen3_5_moe", "glm_ocr", "glm46v"}) {
    SCOPED_TRACE(type);
    testing::TempDir tmp;
    SampleSpec spec;
    spec.arch = find_architecture(type);
    ASSERT_NE(spec.arch, nullptr);
    spec.embed_dim = 64;
    ASSERT_TRUE(write_sample_checkpoint(tmp / "ckpt", spec).ok());
    const Model model = testing::convert_fixture_dir(tmp / "ckpt", tmp / "m.pfb");
    const pf_module_info info = model.module(0);
    ASSERT_TRUE(info.has_preprocessing);
    const std::string steps = info.encoder_input;
    if (std::string(type) == "glm_ocr") {
      EXPECT_EQ(steps, "none (the patch embedding is the encoder input)");
    } else {
      EXPECT_NE(steps.find("+ position"), std::string::npos) << steps;
    }
    Session s = session(model, PF_PRECISION_F32, PF_OUTPUT_ENCODER_INPUT);
    const size_t side = std::string(type).rfind("qwen3_5", 0) == 0 ? 256 : 224;  // the processors' own sizes
    std::vector<uint8_t> rgb(side * side * 3, 77);
    const uint8_t* frame = rgb.data();
    auto grid = s.frames_grid(1, side, side);
    ASSERT_TRUE(grid) << grid.error();
    auto rows = s.output_rows(*grid);
    ASSERT_TRUE(rows);
    std::vector<float> out(static_cast<size_t>(*rows) * 64);
    ASSERT_EQ(s.run_frames(&frame, 1, side, side, side * 3, out.data()), "");
    auto infos = s.block_inputs(*grid);
    ASSERT_TRUE(infos) << infos.error();
    ASSERT_EQ(infos->size(), 3u);  // rotary_cos, rotary_sin, cu_seqlens: no deepstack, no window
    EXPECT_EQ(infos->at(0).shape[0], *rows);
    auto b = s.block_schedule();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->depth, std::string(type).rfind("qwen3_5", 0) == 0 ? 27 : 24);
  }
}

}  // namespace
}  // namespace patchfuse
