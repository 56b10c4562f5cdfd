// A HIP kernel that compiles without the ROCm headers (-nogpuinc): clang
// needs the runtime's launch function declared for the host side.
#include <stddef.h>
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 grid, dim3 block, void **args,
                               size_t shared, hipStream_t stream);

__attribute__((global)) void scale(float *p, float f) {
  p[__builtin_amdgcn_workitem_id_x()] *= f;
}
