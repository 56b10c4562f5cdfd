
// __CLANG_OFFLOAD_BUNDLE____START__ hip-amdgcn-amd-amdhsa--gfx906
int x;
// __CLANG_OFFLOAD_BUNDLE____END__ hip-amdgcn-amd-amdhsa--gfx906

// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-
int y;
