ªªªªªªªª
# __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-
host line 1
host line 2

# __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-

# __CLANG_OFFLOAD_BUNDLE____START__ hip-amdgcn-amd-amdhsa--gfx906
dev line 1
dev line 2
# __CLANG_OFFLOAD_BUNDLE____END__ hip-amdgcn-amd-amdhsa--gfx906
