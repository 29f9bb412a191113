// A fixture checkpoint folder converted by the converter library (both fusion families on) and
// opened through the C++ API; header-only.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "converter/convert.h"
#include "patchfuse/patchfuse.hpp"

namespace patchfuse::testing {

// The .pfb alone, for tests that read the file's bytes.
inline void convert_fixture_file(const std::string& dir, const std::string& out) {
  ConvertOptions o;
  o.input = dir;
  o.output = out;
  for (const char* f : {"patch_embeddings", "conv2d_patch_embeddings"}) o.fusion.push_back({f, FusionValue{}});
  auto r = convert_checkpoint(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
}

inline Model convert_fixture_dir(const std::string& dir, const std::string& out) {
  convert_fixture_file(dir, out);
  auto model = Model::open_file(out);
  EXPECT_TRUE(model) << model.error();
  return std::move(*model);
}

}  // namespace patchfuse::testing
