// OpenMP offloading to the host plugin: the "device" is this x86-64 CPU,
// so the program runs without a GPU.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int n = 1000, sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum)
  for (int i = 0; i < n; i++)
    sum += i;
  printf("sum = %d (expected %d), offloaded: %s\n", sum, n * (n - 1) / 2,
         omp_get_num_devices() > 0 ? "yes" : "no");
  return sum != n * (n - 1) / 2;
}
