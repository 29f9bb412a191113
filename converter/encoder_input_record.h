// The encoder input's record for one patch-embedding module: the architecture's EncoderSteps
// resolved against the checkpoint (tensors found beside the module, kept in their stored dtype,
// reshaped to the runtime's [rows, embed_dim] / [embed_dim]) and the config (eps, merge and
// window sizes). A tensor a step needs but the checkpoint lacks is listed in `missing`: the model
// still converts, and a session asked for the encoder input says which tensor it lacks.
#pragma once

#include "converter/architectures.h"
#include "converter/checkpoint.h"
#include "converter/hf_config.h"
#include "converter/model_writer.h"

namespace patchfuse {

Result<EncoderInputRecord> encoder_input_record(Checkpoint& ckpt, const Architecture& arch, const VisionConfig& config,
                                                const std::string& module, const ConvGeometry& geometry,
                                                std::vector<std::string>& notes);

// The blocks' schedule and what they take per grid: the architecture's BlockSteps with the
// config's values (its defaults where config.json leaves a field out). Errors name config.json's
// field and value: a head count that does not divide the width, indexes past the depth. A default
// head count that does not divide the width refuses the block inputs (BlockSpec::refused) instead.
Result<BlockSpec> block_spec(const Architecture& arch, const VisionConfig& config, const ConvGeometry& geometry);

}  // namespace patchfuse
