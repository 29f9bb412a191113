// The gather rows in portable C++: the baseline form, the oracle the others are tested against,
// and the int8 kernels' copies.
#include "runtime/frames/kernels/gather_rows.h"

namespace patchfuse {

void emit_rows_f32_portable(const MergeRow& r, float* out) { emit_rows_with<PortableRow>(r, out); }
void emit_rows_bf16_portable(const MergeRow& r, uint16_t* out) { emit_rows_with<PortableRow>(r, out); }
void emit_rows_u8_portable(const MergeRow& r, uint8_t* out) { emit_rows_with<PortableRow>(r, out); }

}  // namespace patchfuse
