// Calls the kernel of axpy.cu through its host launcher and checks the
// result: exit 0 and "OK" when the kernel ran.
#include <cstdio>
#include <cuda_runtime.h>
int launch(float a, const float *x, float *y, int n);
int main() {
  const int n = 1 << 20;
  float *x, *y;
  if (cudaMallocManaged(&x, n * sizeof(float)) || cudaMallocManaged(&y, n * sizeof(float))) {
    printf("ALLOC-FAIL\n");
    return 1;
  }
  for (int i = 0; i < n; i++) { x[i] = i; y[i] = 1; }
  int r = launch(2.0f, x, y, n);
  cudaError_t e = cudaGetLastError();
  bool ok = r == 0 && e == cudaSuccess;
  for (int i = 0; ok && i < n; i++) ok = y[i] == 2.0f * i + 1;
  printf("%s launch=%d error=%s\n", ok ? "OK" : "FAIL", r, cudaGetErrorString(e));
  return ok ? 0 : 1;
}
