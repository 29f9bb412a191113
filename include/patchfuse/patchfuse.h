/* patchfuse runtime: the patch embedding of vision encoders (the Qwen2-VL family's Conv3d, SigLIP,
 * CLIP and ViT's Conv2d, and the VLMs built on them) as a GEMM, and the encoder's block-0 input and
 * block inputs, from pixel_values or camera frames.
 *
 * A worked example (error handling shortened; every call returns a pf_status):
 *
 *   pf_model* model = NULL;
 *   if (pf_model_open_file("qwen2-vl.pfb", &model) != PF_OK) {
 *     fprintf(stderr, "%s\n", pf_last_error());
 *     return 1;
 *   }
 *   pf_session_options opts;
 *   pf_session_options_init(&opts);         // backend auto, 1 thread, precision auto, fused path
 *   opts.threads = 2;
 *   pf_session* session = NULL;
 *   pf_session_create(model, 0, &opts, &session);  // module 0; packs the weights its model is for
 *
 *   pf_module_info info;
 *   pf_model_get_module(model, 0, &info);   // info.patch_volume = C*kt*kh*kw, info.embed_dim
 *   // pixels: float32 [n, info.patch_volume], what the HF image processor calls pixel_values
 *   // out:    float32 [n, info.embed_dim]
 *   pf_session_run(session, pixels, n, out);
 *
 *   pf_session_release(session);            // before the model it was created from
 *   pf_model_release(model);
 *
 * Threading: a pf_model is immutable after opening and may be used by any number of threads at
 * once (sessions on several threads). A pf_session must be used by one thread at a time.
 * No function aborts the process on bad input and no C++ exception crosses this interface.
 */
#ifndef PATCHFUSE_PATCHFUSE_H_
#define PATCHFUSE_PATCHFUSE_H_

#include <stddef.h>
#include <stdint.h>

#include "patchfuse/version.h"

#if defined(_WIN32)
#define PF_API __declspec(dllexport)
#else
#define PF_API __attribute__((visibility("default")))
#endif

/* Every enum has a fixed 32-bit underlying type in C++, so any value a C caller passes (say 42 for
 * a pf_backend) is a representable value that the library rejects with PF_INVALID_ARGUMENT, never
 * undefined behaviour. In C the same enums are int-sized, so both see one ABI. */
#ifdef __cplusplus
#define PF_ENUM(name) enum name : int32_t
#else
#define PF_ENUM(name) enum name
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Status of every call. Grouped by kind; pf_last_error() has the details. */
typedef PF_ENUM(pf_status) {
  PF_OK = 0,
  PF_INVALID_ARGUMENT = 1, /**< a null pointer, N = 0, an out-of-range index or option */
  PF_INVALID_MODEL = 2,    /**< the model file breaks the format or the fusion rules */
  PF_UNSUPPORTED = 3,      /**< valid, but not available here (backend not built, CPU lacks a feature) */
  PF_IO_ERROR = 4,         /**< the file could not be opened or mapped */
  PF_OUT_OF_MEMORY = 5,
  PF_INTERNAL = 6          /**< a backend library failed unexpectedly */
} pf_status;

typedef PF_ENUM(pf_backend) {
  PF_BACKEND_AUTO = 0,      /**< the first of oneDNN (x86-64), XNNPACK, gemmlowp, reference that computes the
                                 requested precision: oneDNN on x86-64, XNNPACK on ARM (gemmlowp for int8) */
  PF_BACKEND_REFERENCE = 1, /**< portable C++, always built: the oracle */
  PF_BACKEND_ONEDNN = 2,    /**< x86-64: f32, bf16 where the CPU has AVX512-BF16, int8 */
  PF_BACKEND_XNNPACK = 3,   /**< ARM and x86-64: f32, f16 where the CPU has FP16 arithmetic */
  PF_BACKEND_GEMMLOWP = 4   /**< ARM's int8 (and x86-64 with AVX2): frames only, exact integer sums; gemmlowp's
                                 kernels, and on aarch64 cores with the dot product patchfuse's own SDOT kernel */
} pf_backend;

typedef PF_ENUM(pf_precision) {
  PF_PRECISION_AUTO = 0, /**< the model's weight dtype where the backend runs it natively, else f32 */
  PF_PRECISION_F32 = 1,
  PF_PRECISION_BF16 = 2, /**< bf16 inputs and weights, f32 accumulation and output */
  PF_PRECISION_F16 = 3,  /**< f16 inputs and weights; accumulation as the backend does it */
  PF_PRECISION_INT8 = 4  /**< frames only: the uint8 pixels exactly, the folded weights as per-channel int8;
                              never chosen by AUTO (see pf_session_run_frames) */
} pf_precision;

typedef PF_ENUM(pf_path) {
  PF_PATH_FUSED = 0,  /**< one GEMM over the flattened patch */
  PF_PATH_UNFUSED = 1 /**< the backend's own convolution on the original [N, C, kt, kh, kw] view */
} pf_path;

/** What a run writes. See pf_session_run_grid and docs/encoder-input.md's model-type table. */
typedef PF_ENUM(pf_output_stage) {
  PF_OUTPUT_PATCHES = 0,      /**< the patch-embedding conv's output: [t*h*w, embed_dim] */
  PF_OUTPUT_ENCODER_INPUT = 1 /**< the vision encoder's first block input, exactly as Hugging Face computes it:
                                   conv, then the model's position term, class row, first norm and (Qwen2.5-VL)
                                   window order; [t*(class_rows + h*w), embed_dim], each image's sequence in
                                   turn with its class row first */
} pf_output_stage;

typedef PF_ENUM(pf_dtype) { PF_DTYPE_F32 = 0, PF_DTYPE_F16 = 1, PF_DTYPE_BF16 = 2 } pf_dtype;

typedef PF_ENUM(pf_layout) {
  PF_LAYOUT_FUSED_LINEAR = 0, /**< weight stored as [embed_dim, patch_volume] */
  PF_LAYOUT_ORIGINAL_CONV = 1 /**< weight stored as [embed_dim, C, kt, kh, kw] */
} pf_layout;

typedef struct pf_model pf_model;
typedef struct pf_session pf_session;

/** Description of one module. Strings are owned by the model and live as long as it does. */
typedef struct pf_module_info {
  const char* path;   /**< e.g. "visual.patch_embed" */
  const char* family; /**< e.g. "patch_embeddings" */
  pf_layout layout;
  pf_dtype dtype;
  int32_t spatial_rank; /**< 3 for Conv3d (t, h, w), 2 for Conv2d (h, w); kernel..dilation use the first spatial_rank entries */
  int32_t kernel[3], stride[3], padding[3], dilation[3];
  int32_t groups, in_channels, embed_dim;
  int64_t patch_volume; /**< in_channels * prod(kernel): the input row length */
  int32_t has_bias;
  int32_t eligible; /**< 1 when the fusion rules allow running it (both paths need this) */
  int32_t has_preprocessing; /**< 1 when the model stores Hugging Face's image preprocessing, so
                                  the frames functions below can take uint8 frames */
  const char* encoder_input; /**< the steps PF_OUTPUT_ENCODER_INPUT applies, e.g. "class row first (...),
                                  + position (...), LayerNorm (...)", or why it is refused; null for a
                                  model converted before they were stored (patches only) */
  int32_t class_rows;        /**< class rows the encoder input puts before each image's patch rows (0 or 1) */
} pf_module_info;

/** image_grid_thw of a frames run: output rows = t * h * w, in Hugging Face's order. */
typedef struct pf_grid {
  int64_t t, h, w;
} pf_grid;

/** How an image's bytes are laid out (pf_image). Interleaved formats name the bytes in memory
 *  (RGB = R, G, B). NV12: a Y plane, then one plane of interleaved U, V at half width and height
 *  (NV21: V, U). I420: Y, U and V planes, U and V at half width and height, their samples
 *  chroma_pixel_stride bytes apart (Android's YUV_420_888 gives 1 or 2). YUYV: Y0 U Y1 V per
 *  pixel pair. Odd sizes round the chroma up. Converted as Pillow's convert("RGB") would:
 *  alpha dropped (not composited), gray replicated; YUV by libyuv with the pf_color_matrix. */
typedef PF_ENUM(pf_pixel_format) {
  PF_PIXEL_RGB = 0,
  PF_PIXEL_BGR = 1,
  PF_PIXEL_RGBA = 2,
  PF_PIXEL_BGRA = 3,
  PF_PIXEL_GRAY8 = 4,
  PF_PIXEL_NV12 = 5,
  PF_PIXEL_NV21 = 6,
  PF_PIXEL_I420 = 7,
  PF_PIXEL_YUYV = 8
} pf_pixel_format;

/** YUV -> RGB matrix: BT.601 full range (JFIF: JPEG's, and what Android's camera2 hands out as
 *  YUV_420_888), BT.601 limited (studio swing: SD video, many V4L2 webcams), BT.709 limited (HD
 *  video from decoders). The default everywhere is PF_COLOR_BT601_FULL: the value 0 of a zeroed
 *  pf_image and of pf_image_packed, patchfuse-run's and patchfuse-bench's --matrix, and the
 *  Python module's; a decoder's or a webcam's frames usually need the limited matrices set. */
typedef PF_ENUM(pf_color_matrix) {
  PF_COLOR_BT601_FULL = 0,
  PF_COLOR_BT601_LIMITED = 1,
  PF_COLOR_BT709_LIMITED = 2
} pf_color_matrix;

/** A camera frame or decoded image of any size. Only read during the call that takes it; no
 *  padding is needed after any plane. Zero-initialize it, or fill it with pf_image_packed. */
typedef struct pf_image {
  pf_pixel_format format;
  pf_color_matrix matrix;          /**< YUV formats only; 0 (a zeroed struct, pf_image_packed) is BT.601 full range */
  int64_t width, height;           /**< pixels; 1 to 32768 per side, at most 2^28 pixels */
  const uint8_t* planes[3];        /**< interleaved formats: planes[0]; NV12/NV21: Y, UV; I420: Y, U, V */
  int64_t row_stride_bytes[3];     /**< per plane, at least one row's bytes */
  int64_t chroma_pixel_stride;     /**< I420 only: 1 (planar) or 2 (semi-planar); 0 means 1 */
} pf_image;

typedef struct pf_session_options {
  pf_backend backend;
  int32_t threads; /**< >= 1 */
  pf_precision precision;
  pf_path path;
  pf_output_stage output_stage; /**< PF_OUTPUT_PATCHES by default */
  /** Path of a packed-weights cache file, or NULL (the default): what the session derives from
   *  the weights (folded normalization, int8 quantization, the backend's packed layout where it
   *  can take one back: oneDNN) is mapped from this file instead of computed, and written to it
   *  when missing. Keyed by the module's weight bytes (a hash), library and backend versions, the
   *  CPU's ISA, precision, path and threads; a stale, foreign or corrupt file is verified, refused
   *  and rewritten (atomically), never trusted. The file holds one model's kernels: a session of
   *  another model replaces them. pf_session_info.weights_cache says what happened; a cache that
   *  cannot be written does not fail the session. Read during pf_session_create only. */
  const char* weights_cache;
} pf_session_options;

/** What a session actually runs. Strings are owned by the session. */
typedef struct pf_session_info {
  pf_backend backend;     /**< never PF_BACKEND_AUTO */
  pf_precision precision; /**< what it computes in; never PF_PRECISION_AUTO */
  pf_path path;
  int32_t threads;
  pf_output_stage output_stage;
  const char* detail; /**< backend and kernel, e.g. "oneDNN 2.6.3 matmul brg:avx512_core_bf16" */
  const char* note;   /**< why precision differs from the model dtype, or "" */
  const char* isa;    /**< instruction set the library dispatched to, in its own words (oneDNN:
                           "avx2", "avx512_core_bf16", "avx512_core_amx", ...; capped by
                           ONEDNN_MAX_CPU_ISA; gemmlowp backend: "neon_dotprod" for the SDOT kernel, else
                           gemmlowp's variant "neon", "portable" or "avx2"), or "" where the library does not
                           say (reference, XNNPACK) */
  /** What the weights cache did for the kernels packed so far: "" without one; otherwise one
   *  line per kernel, e.g. "still: loaded", "still: written (no entry for this key)",
   *  "still: rebuilt (corrupt: checksum mismatch)", "video: not written (...: Permission denied)". */
  const char* weights_cache;
  /** The frames path's own loops (pixel format to planes, resize, gather) as this CPU runs them,
   *  e.g. "resize avx512_vnni (videos portable), planes avx2, gather avx2" or "resize neon,
   *  planes neon, gather neon": a vector form, or "portable" (torch semantics and NEAREST resize
   *  portably; PATCHFUSE_MAX_CPU_ISA=baseline caps all of them); gather "copy" for int8. "" for a
   *  model without preprocessing. */
  const char* frame_kernels;
} pf_session_info;

/** Where the last run on a session spent its time: wall clock on the calling thread (the
 *  session's threads included), in milliseconds, 0 for a stage that run did not have. A
 *  pixel_values run has only kernel_ms; pf_session_run_frames gather and kernel; image and video
 *  runs all three; pf_session_preprocess preprocess_ms. Each run starts it from zero. */
typedef struct pf_run_profile {
  double preprocess_ms; /**< pixel format conversion, resize and centre crop */
  double gather_ms;     /**< the patch rows from the frames, in the kernel's input type */
  double kernel_ms;     /**< the projection */
  double encoder_input_ms; /**< the encoder input's per-row epilogue */
  /** One-time work this run did, not counted in the stages above: a path's weights folded and packed,
   *  resize tables, the backend's plan for a new chunk size, buffer growth (first touched), the
   *  encoder input's grid terms for a new grid. Exactly 0 for a run whose size was prepared
   *  (pf_session_prepare) or already run. */
  double setup_ms;
} pf_run_profile;

/** Message for the last failed call on this thread ("" if none). Valid until the next call on
 *  this thread; not to be freed. */
PF_API const char* pf_last_error(void);
/** Static name of a status, e.g. "invalid model". */
PF_API const char* pf_status_name(pf_status status);
/** Static name of a backend ("auto", "reference", "onednn", "xnnpack"). */
PF_API const char* pf_backend_name(pf_backend backend);
/** 1 when `backend` is built into this library and can run on this CPU, else 0. */
PF_API int pf_backend_available(pf_backend backend);
/** Version of the library actually loaded, e.g. "0.2.0" (PF_VERSION_STRING is the one compiled
 *  against). Static. */
PF_API const char* pf_version(void);

/** Opens and verifies a .pfb file through a read-only mmap (zero-copy).
 *  @param path  not retained after return.
 *  @param out   receives the model; release it with pf_model_release.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null), PF_IO_ERROR, PF_INVALID_MODEL. */
PF_API pf_status pf_model_open_file(const char* path, pf_model** out);

/** Verifies a model held in caller memory without copying it.
 *  @param data  8-byte aligned (malloc and mmap memory is); must stay valid and unchanged until
 *               pf_model_release (and every session created from the model is released).
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, misaligned), PF_INVALID_MODEL. */
PF_API pf_status pf_model_open_memory(const void* data, size_t size, pf_model** out);

/** Releases a model. Sessions created from it must be released first. Null is ignored. */
PF_API void pf_model_release(pf_model* model);

/** @param out  receives the number of modules (>= 1 for a verified model). */
PF_API pf_status pf_model_module_count(const pf_model* model, size_t* out);

/** @param out  filled with module `index` (0-based); its strings are owned by the model.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, index out of range). */
PF_API pf_status pf_model_get_module(const pf_model* model, size_t index, pf_module_info* out);

/** Finds a module by path. @param path not retained.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, no such module: the message lists the paths). */
PF_API pf_status pf_model_find_module(const pf_model* model, const char* path, size_t* index_out);

/** Defaults: PF_BACKEND_AUTO, 1 thread, PF_PRECISION_AUTO, PF_PATH_FUSED, PF_OUTPUT_PATCHES. */
PF_API void pf_session_options_init(pf_session_options* options);

/** Creates a session for one module: checks the fusion rules, picks the kernels, and packs the
 *  weights of the input the model is for: a model with preprocessing, its still-image weights
 *  (normalization folded in; quantized in int8); otherwise its pixel_values weights. The other
 *  inputs' weights (pixel_values, video) are packed once, on their first use: pf_session_prepare
 *  or their first run. An original-layout module is fused here for the fused path.
 *  @param model    must outlive the session.
 *  @param options  not retained; null means the defaults.
 *  @param out      receives the session; release it with pf_session_release.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, bad option, index out of range),
 *          PF_UNSUPPORTED (backend not built or not usable on this CPU, precision not offered
 *          by the backend, module not eligible), PF_OUT_OF_MEMORY, PF_INTERNAL. */
PF_API pf_status pf_session_create(const pf_model* model, size_t module_index, const pf_session_options* options,
                                   pf_session** out);

/** Runs the projection: output[n, embed_dim] = input[n, patch_volume] x W^T (+ bias).
 *  The row layout of `input` is the patch flattened as (C, kt, kh, kw), so a C-order
 *  [n, C, kt, kh, kw] array is the same memory.
 *  @param input   n * patch_volume floats; read only during the call; no padding needed.
 *  @param output  n * embed_dim floats; written only during the call; must not overlap input.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, n == 0, n above 2^31 - 1, n * row length overflows),
 *          PF_OUT_OF_MEMORY, PF_INTERNAL. */
PF_API pf_status pf_session_run(pf_session* session, const float* input, size_t n, float* output);

/** pixel_values rows of a known grid (image_grid_thw: t * h * w rows in the processor's order) into
 *  the session's output stage; the way to get the encoder input from pixel_values, since its
 *  position terms and row order depend on the grid. Conv2d models: t images of h x w patches.
 *  The grid's terms (position term, class row, window slots) are computed on the first run of a
 *  grid and kept for the 4 most recently used grids.
 *  @param input   t * h * w * patch_volume floats; read only during the call.
 *  @param grid    not retained; t, h and w 1 to 2^20; h and w multiples of the merge size for
 *                 encoder-input sessions.
 *  @param output  pf_session_output_rows(grid) * embed_dim floats; must not overlap input.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, a grid the model refuses), PF_UNSUPPORTED (int8),
 *          PF_OUT_OF_MEMORY, PF_INTERNAL. */
PF_API pf_status pf_session_run_grid(pf_session* session, const float* input, const pf_grid* grid, float* output);

/** Output rows of any run on `grid` in the session's output stage: t * h * w for patches;
 *  t * (class_rows + h * w) for the encoder input.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, a grid the model refuses). */
PF_API pf_status pf_session_output_rows(const pf_session* session, const pf_grid* grid, int64_t* rows_out);

/** Qwen2.5-VL's window attention order for `grid`, as transformers' get_vision_window_index gives
 *  it: window_index[k] is the merge group (merge_size^2 rows) at group position k of the encoder
 *  input, reverse_index its inverse (argsort: apply it to the merger's output), and
 *  cu_window_seqlens the window boundaries in rows, starting at 0. Any session of the model answers
 *  (the order does not depend on the output stage). Null arrays with capacities 0 ask the sizes
 *  (computed without making the order, so cheap for any grid).
 *  @param window_index, reverse_index  index_capacity entries each, or null.
 *  @param cu_window_seqlens            cu_capacity entries, or null.
 *  @param index_count_out, cu_count_out  receive the sizes (t*h*w/merge^2 and windows + 1).
 *  @return PF_OK, PF_INVALID_ARGUMENT (null session or counts, a grid the model refuses, a
 *          capacity too small: the counts are still written), PF_UNSUPPORTED (the model has no
 *          window attention). */
PF_API pf_status pf_session_window_index(const pf_session* session, const pf_grid* grid, int64_t* window_index,
                                         int64_t* reverse_index, size_t index_capacity, int64_t* cu_window_seqlens,
                                         size_t cu_capacity, size_t* index_count_out, size_t* cu_count_out);

/** Element types of the block inputs (numpy's float32, int32, int64). */
typedef PF_ENUM(pf_element_type) { PF_ELEMENT_F32 = 0, PF_ELEMENT_I32 = 1, PF_ELEMENT_I64 = 2 } pf_element_type;

/** One tensor the vision encoder's blocks take besides the hidden states, for one grid
 *  (docs/encoder-input.md, "Block inputs"): named as transformers names the variable (rotary_cos,
 *  rotary_sin, cu_seqlens, cu_window_seqlens, window_index, reverse_indices,
 *  fullatt_block_indexes, deepstack_visual_indexes, position_ids), in its dtype, rows in the
 *  encoder input's order (window order for Qwen2.5-VL). */
typedef struct pf_block_input_info {
  const char* name;     /**< static storage: valid for the life of the process */
  pf_element_type type;
  int32_t rank;         /**< 1 or 2 */
  int64_t shape[2];     /**< the first `rank` entries */
  size_t bytes;
} pf_block_input_info;

/** The blocks' schedule, from the model's config.json (or its config class's defaults). */
typedef struct pf_block_schedule {
  int32_t depth;         /**< blocks; 0 when config.json did not say */
  int32_t num_heads;     /**< 0 when config.json did not say */
  int32_t head_dim;      /**< the rotary tables' width (0: no rotary tables) */
  double rope_theta;     /**< the rotary tables' theta (10000 for the vision RoPE) */
  const char* rotary;    /**< "none", "vision_2d" (Qwen/GLM towers) or "pixtral" */
  const char* description; /**< in words, e.g. "32 blocks, 16 heads of 80; full attention (cu_seqlens) at
                                blocks 7, 15, 23, 31, window attention (cu_window_seqlens) at the others";
                                owned by the session */
} pf_block_schedule;

/** How many block inputs the blocks take for `grid` (0: the hidden states only, as in SigLIP,
 *  CLIP and ViT). Any session of the model answers, whatever its output stage.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, a grid the model refuses), PF_UNSUPPORTED (a model
 *          converted before the schedule was stored: convert it again). */
PF_API pf_status pf_session_block_input_count(const pf_session* session, const pf_grid* grid, size_t* count_out);

/** The name, type and shape of block input `index` (< count) for `grid`.
 *  @return as pf_session_block_input_count, and PF_INVALID_ARGUMENT for an index past the count. */
PF_API pf_status pf_session_block_input_info(const pf_session* session, const pf_grid* grid, size_t index,
                                             pf_block_input_info* info_out);

/** Writes block input `name` for `grid` into `buffer` (C order, the info's type and shape). Its
 *  float tables are computed once per grid (in double, rounded as transformers rounds them in the
 *  session's precision: the vision RoPE's stay float32, Pixtral's take the model dtype), kept for
 *  the 4 most recently used grids, and made by pf_session_prepare for encoder-input sessions; a
 *  run never computes them.
 *  @param buffer_bytes  at least the info's bytes.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, an unknown name: the message lists the model's, a
 *          grid the model refuses, a buffer too small), PF_UNSUPPORTED (converted before the
 *          schedule was stored), PF_OUT_OF_MEMORY. */
PF_API pf_status pf_session_block_input(pf_session* session, const char* name, const pf_grid* grid, void* buffer,
                                        size_t buffer_bytes);

/** @param out  filled; its strings live as long as the session.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null), PF_UNSUPPORTED (converted before the schedule was stored). */
PF_API pf_status pf_session_block_schedule(const pf_session* session, pf_block_schedule* out);

/** @param out  filled; its strings are owned by the session. */
PF_API pf_status pf_session_get_info(const pf_session* session, pf_session_info* out);

/** The last run's time per stage (pf_run_profile); all zero before the first run.
 *  @return PF_OK or PF_INVALID_ARGUMENT (null argument). */
PF_API pf_status pf_session_last_profile(const pf_session* session, pf_run_profile* out);

/** The size Hugging Face's processor resizes a height x width image to: smart_resize of the
 *  model's family (Python rounding) for Qwen2-VL-style models, the processor's fixed size (after
 *  its centre crop, if any) for SigLIP/CLIP/ViT-style ones. Resize with your own pipeline to this
 *  size, then call pf_session_run_frames with the result.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, index out of range, size out of range or aspect
 *          ratio above 200), PF_UNSUPPORTED (the module has no preprocessing). */
PF_API pf_status pf_model_frame_size(const pf_model* model, size_t module_index, int64_t height, int64_t width,
                                     int64_t* height_out, int64_t* width_out);

/** The size Hugging Face's video processor resizes each frame of a `frames`-frame video of
 *  height x width to (video_preprocessor_config.json, stored by the converter; a model converted
 *  without one sizes video frames like images). Qwen3-VL and GLM-4V budget pixels over the
 *  frame count and refuse fewer than temporal_patch_size frames. Conv2d models: the fixed size.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, index out of range, size or frame count out of range,
 *          aspect ratio above 200), PF_UNSUPPORTED (the module has no preprocessing). */
PF_API pf_status pf_model_video_frame_size(const pf_model* model, size_t module_index, size_t frames, int64_t height,
                                           int64_t width, int64_t* height_out, int64_t* width_out);

/** The grid (and so the output size) for `t` frames of height x width. Qwen2-VL-style models: both
 *  must be multiples of patch_size * merge_size (the message gives the size smart_resize would
 *  use). Conv2d models (SigLIP, CLIP, ViT, ...): at least one patch; like nn.Conv2d the grid is
 *  floor(height / patch) x floor(width / patch), and each of the t frames is one image.
 *  @return PF_OK, PF_INVALID_ARGUMENT, PF_UNSUPPORTED (no preprocessing). */
PF_API pf_status pf_session_frames_grid(const pf_session* session, size_t t, size_t height, size_t width,
                                        pf_grid* grid_out);

/** Patch embeddings of uint8 RGB frames, preprocessed exactly as Hugging Face's image processor
 *  does (rescale and normalize folded into the weights; patches in its row order).
 *  Qwen2-VL-style (Conv3d) models: a still image is t = 1 and costs half a video frame pair (the
 *  weights are summed over time); a video's frames are grouped temporal_patch_size at a time, an
 *  odd count repeating the last; rows come in 2x2 merge groups. Conv2d models: t images, each
 *  giving its patches in raster order (row-major over the patch grid).
 *  Each weight set (still, video) is folded and packed once: the still one at creation.
 *  @param frames  `t` pointers to frames of `height` rows, HWC interleaved (R, G, B bytes), rows
 *                 `row_stride_bytes` apart (>= width * 3); read only during the call; no padding
 *                 needed. Separate pointers because video frames usually live in separate buffers.
 *  @param output  float32 [grid.t * grid.h * grid.w, embed_dim] (see pf_session_frames_grid).
 *  @param grid_out  receives the grid; may be null.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, t == 0, size not a multiple, stride too small),
 *          PF_UNSUPPORTED (no preprocessing), PF_OUT_OF_MEMORY, PF_INTERNAL. */
PF_API pf_status pf_session_run_frames(pf_session* session, const uint8_t* const* frames, size_t t, size_t height,
                                       size_t width, size_t row_stride_bytes, float* output, pf_grid* grid_out);

/** Fills `image` for a tightly packed buffer: rows of width * bytes per pixel, planes one after
 *  the other (NV12/NV21/I420: the Y plane, then the chroma at ceil(width/2) x ceil(height/2)),
 *  as camera dumps and most decoders write them.
 *  @param data  must outlive every call that uses `image`.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, unknown format, size out of range). */
PF_API pf_status pf_image_packed(pf_image* image, pf_pixel_format format, const uint8_t* data, int64_t width,
                                 int64_t height);

/** The grid (and so the output size) of pf_session_run_image (t = 1) or pf_session_run_video (t
 *  frames) on images of height x width: the processor's resize target, then its grid.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, t == 0, size out of range, aspect ratio above 200),
 *          PF_UNSUPPORTED (no preprocessing). */
PF_API pf_status pf_session_images_grid(const pf_session* session, size_t t, int64_t height, int64_t width,
                                        pf_grid* grid_out);

/** Patch embeddings of an image of any size and pixel format: converted to RGB, resized and
 *  centre-cropped exactly as the model's Hugging Face processor does (the filter, crop and resize
 *  semantics stored by patchfuse-convert: `pil` is Pillow's bytes exactly, `torch` is torch's
 *  float antialiased resize), on the session's threads, then as pf_session_run_frames. The app
 *  does no resize of its own.
 *  @param output  float32 [grid.t * grid.h * grid.w, embed_dim] (see pf_session_images_grid).
 *  @param grid_out  receives the grid; may be null.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, unknown format or matrix, size out of range, stride
 *          too small, a null plane), PF_UNSUPPORTED (no preprocessing), PF_OUT_OF_MEMORY, PF_INTERNAL. */
PF_API pf_status pf_session_run_image(pf_session* session, const pf_image* image, float* output, pf_grid* grid_out);

/** The same for a video of `t` frames (one size and format), sized by the video processor's rule
 *  and resize semantics; frames are resized temporal_patch_size at a time.
 *  @param frames  an array of t images. */
PF_API pf_status pf_session_run_video(pf_session* session, const pf_image* frames, size_t t, float* output,
                                      pf_grid* grid_out);

/** The processor's uint8 RGB pixels (HWC, rows width * 3 bytes apart) for `image` as a still image
 *  (t = 1) or a frame of a t-frame video: what Hugging Face's resize and centre crop give, the
 *  frame the embeddings are computed from.
 *  @param rgb_out  capacity_bytes bytes; height_out * width_out * 3 are written. Null with
 *                  capacity 0 asks the size: PF_INVALID_ARGUMENT, with the size written.
 *  @return PF_OK, PF_INVALID_ARGUMENT (as pf_session_run_image, or capacity too small; the size is
 *          still written), PF_UNSUPPORTED (no preprocessing). */
PF_API pf_status pf_session_preprocess(pf_session* session, const pf_image* image, size_t t, uint8_t* rgb_out,
                                       size_t capacity_bytes, int64_t* height_out, int64_t* width_out);

/** What the app will send, for pf_session_prepare. */
typedef PF_ENUM(pf_input_kind) {
  PF_INPUT_PIXEL_VALUES = 0, /**< pixel_values rows of `grid` (pf_session_run, pf_session_run_grid) */
  PF_INPUT_FRAMES = 1,       /**< t uint8 RGB frames of height x width (pf_session_run_frames) */
  PF_INPUT_IMAGES = 2        /**< t images of height x width in `format` (pf_session_run_image: t = 1; _run_video) */
} pf_input_kind;

typedef struct pf_input_shape {
  pf_input_kind kind;
  pf_grid grid;            /**< PIXEL_VALUES: the rows' grid; {1, 1, N} for N rows in the patches stage */
  size_t t;                /**< FRAMES, IMAGES: the frame count (1: a still image) */
  int64_t height, width;   /**< FRAMES, IMAGES: each frame's size in pixels */
  pf_pixel_format format;  /**< IMAGES */
} pf_input_shape;

/** Does ahead of time what the first run of this input size would do once: the resize tables, the
 *  folded and packed weights of its path (pixel_values or video), the backend's primitives for the
 *  chunk sizes it runs (oneDNN's JIT included), the session's buffers (first touched), and the
 *  encoder input's grid terms, without running anything, so the next run of that size runs at
 *  steady speed (a run of another size still pays its own first run). Not
 *  retained: `shape` is read during the call. The session's last profile is left as it was.
 *  @return PF_OK, PF_INVALID_ARGUMENT (null, unknown kind or format, a size or grid the run would
 *          refuse), PF_UNSUPPORTED (as the run: no preprocessing, int8 pixel_values), PF_OUT_OF_MEMORY. */
PF_API pf_status pf_session_prepare(pf_session* session, const pf_input_shape* shape);

/** Releases a session and its packed weights. Null is ignored. */
PF_API void pf_session_release(pf_session* session);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // PATCHFUSE_PATCHFUSE_H_
