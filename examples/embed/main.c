/* patchfuse-example: what a device app does with patchfuse. Opens a model, creates a session
 * (backend and precision chosen by the library), computes embeddings for one input, says what
 * ran, and checks the result against the reference backend. The input is a synthetic camera
 * frame of the size the model's preprocessing asks for when the model has one (the frames API),
 * otherwise synthetic pixel_values rows.
 *   patchfuse-example MODEL.pfb
 * Exit status 0 when the result is within the tolerance of the precision that ran. */
#include <math.h>
#include <patchfuse/patchfuse.h>
#include <stdio.h>
#include <stdlib.h>

static const char* precision_name(pf_precision p) {
  switch (p) {
    case PF_PRECISION_AUTO: return "auto";
    case PF_PRECISION_F32: return "f32";
    case PF_PRECISION_BF16: return "bf16";
    case PF_PRECISION_F16: return "f16";
    case PF_PRECISION_INT8: return "int8";
  }
  return "?";
}

static int fail(const char* what) {
  fprintf(stderr, "patchfuse-example: %s: %s\n", what, pf_last_error());
  return 1;
}

/* Runs `s` on the example input (a camera frame, or pixel rows); `rows` receives the output rows. */
static pf_status run(pf_session* s, const pf_image* frame, const float* pixels, size_t n, float* out, size_t* rows) {
  if (frame != NULL) {
    pf_grid g;
    pf_status st = pf_session_run_image(s, frame, out, &g);
    *rows = (size_t)(g.t * g.h * g.w);
    return st;
  }
  *rows = n;
  return pf_session_run(s, pixels, n, out);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: patchfuse-example MODEL.pfb\n");
    return 2;
  }
  printf("patchfuse %s (compiled against %s)\n", pf_version(), PF_VERSION_STRING);
  pf_model* model = NULL;
  if (pf_model_open_file(argv[1], &model) != PF_OK) return fail(argv[1]);
  pf_module_info info;
  if (pf_model_get_module(model, 0, &info) != PF_OK) return fail("module 0");

  pf_session_options o;
  pf_session_options_init(&o);
  pf_session* session = NULL;
  if (pf_session_create(model, 0, &o, &session) != PF_OK) return fail("session");
  pf_session_info si;
  pf_session_get_info(session, &si);
  printf("module %s: %d -> %d, backend %s [%s], isa '%s', precision %s%s%s\n", info.path, (int)info.patch_volume,
         info.embed_dim, pf_backend_name(si.backend), si.detail, si.isa, precision_name(si.precision),
         si.note[0] ? ", note: " : "", si.note);

  /* The input: a camera frame as the camera gives it (640x480 NV12; the runtime converts and
     resizes it as the model's processor does), or 64 pixel rows for a model without preprocessing. */
  uint8_t* nv12 = NULL;
  pf_image camera;
  pf_image* frame = NULL;
  float* pixels = NULL;
  size_t n = 64, max_rows = n;
  if (info.has_preprocessing) {
    const int64_t cam_w = 640, cam_h = 480;
    nv12 = malloc((size_t)(cam_w * cam_h * 3 / 2));
    for (int64_t i = 0; i < cam_w * cam_h * 3 / 2; ++i) nv12[i] = (uint8_t)((i * 7919) % 251);
    if (pf_image_packed(&camera, PF_PIXEL_NV12, nv12, cam_w, cam_h) != PF_OK) return fail("image");
    camera.matrix = PF_COLOR_BT601_LIMITED;  /* a video source's range; the default (0) is BT.601 full */
    frame = &camera;
    pf_grid g;
    if (pf_session_images_grid(session, 1, cam_h, cam_w, &g) != PF_OK) return fail("grid");
    max_rows = (size_t)(g.t * g.h * g.w);
    int64_t side = 0, width = 0;
    if (pf_model_frame_size(model, 0, cam_h, cam_w, &side, &width) != PF_OK) return fail("frame size");
    printf("input: one %lldx%lld NV12 camera frame -> the processor's %lldx%lld -> image_grid_thw [%lld, %lld, %lld]\n",
           (long long)cam_h, (long long)cam_w, (long long)side, (long long)width, (long long)g.t, (long long)g.h,
           (long long)g.w);
    /* A video's frames are sized by the video processor's rule, which may depend on the count. */
    int64_t vh = 0, vw = 0;
    if (pf_model_video_frame_size(model, 0, 8, 1080, 1920, &vh, &vw) != PF_OK) return fail("video frame size");
    printf("an 8-frame 1080x1920 video would be resized to %lldx%lld\n", (long long)vh, (long long)vw);
  } else {
    pixels = malloc(n * (size_t)info.patch_volume * sizeof(float));
    for (size_t i = 0; i < n * (size_t)info.patch_volume; ++i) pixels[i] = (float)((int)(i % 97) - 48) / 48.0f;
    printf("input: %zu pixel_values rows\n", n);
  }
  float* y = malloc(max_rows * (size_t)info.embed_dim * sizeof(float));
  float* ref = malloc(max_rows * (size_t)info.embed_dim * sizeof(float));
  size_t rows = 0;
  if (run(session, frame, pixels, n, y, &rows) != PF_OK) return fail("run");

  /* The reference backend, in f32, on the same input: the oracle. */
  pf_session_options r;
  pf_session_options_init(&r);
  r.backend = PF_BACKEND_REFERENCE;
  r.precision = PF_PRECISION_F32;
  pf_session* reference = NULL;
  if (pf_session_create(model, 0, &r, &reference) != PF_OK) return fail("reference session");
  size_t ref_rows = 0;
  if (run(reference, frame, pixels, n, ref, &ref_rows) != PF_OK) return fail("reference run");
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < rows * (size_t)info.embed_dim; ++i) {
    max_diff = fmax(max_diff, fabs((double)y[i] - ref[i]));
    max_ref = fmax(max_ref, fabs((double)ref[i]));
  }
  /* Max |diff| / max |ref|: f32 1e-4, bf16 1e-2, f16 3e-2 (the test suite's bounds). */
  const double tol = si.precision == PF_PRECISION_BF16 ? 1e-2 : si.precision == PF_PRECISION_F16 ? 3e-2 : 1e-4;
  const int ok = rows == ref_rows && max_diff <= tol * max_ref && max_ref > 0;
  printf("%zu x %d embeddings; vs reference backend: max |diff| %.3g of max |ref| %.3g (bound %.0e): %s\n", rows,
         info.embed_dim, max_diff, max_ref, tol, ok ? "OK" : "FAILED");

  pf_session_release(reference);
  pf_session_release(session);
  pf_model_release(model);
  free(nv12);
  free(pixels);
  free(y);
  free(ref);
  return ok ? 0 : 1;
}
