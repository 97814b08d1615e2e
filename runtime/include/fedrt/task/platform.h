#pragma once
// The platform a device binary was compiled for, as its Hello names it to the
// coordinator's devices table (wire/fedrt.proto, docs/dashboard.md). Device
// code: a compile-time string, at most task::kMaxPlatformChars characters.

namespace fedrt::task {

constexpr const char* kPlatformName =
#if defined(__linux__) && defined(__x86_64__)
    "linux-x86_64";
#elif defined(__linux__) && defined(__aarch64__)
    "linux-aarch64";
#elif defined(__linux__) && defined(__arm__) && defined(__ARM_PCS_VFP)
    "linux-armhf";
#elif defined(__linux__) && defined(__arm__)
    "linux-arm";
#elif defined(__ARM_ARCH_7EM__) && defined(__ARM_FP)
    "cortex-m4f";
#elif defined(__ARM_ARCH_7EM__)
    "cortex-m4";
#elif defined(__ARM_ARCH_7M__)
    "cortex-m3";
#elif defined(__ARM_ARCH_8M_MAIN__)
    "cortex-m33";
#elif defined(__linux__)
    "linux";
#else
    "unknown";
#endif

}  // namespace fedrt::task
