# stb_image_skip_known_shift(SOURCE DIR): switches off UndefinedBehaviorSanitizer's shift
# checks for SOURCE (data/stb_image_impl.cpp, stb_image's translation unit) as compiled
# by the targets of directory DIR.
#
# Why: stb_image 2.27 (Debian 12's libstb-dev) decodes a progressive JPEG's AC codes on a
# fast path that does not check that enough bits are buffered. When a marker cuts the scan
# short, its bit count goes negative and the next refill computes `0 << (24 - count)`
# with a shift of 32 or more (stbi__grow_buffer_unsafe): undefined in C, harmless in fact,
# since once a marker has been seen every byte fed in is 0. stb 2.28 rejects such input
# ("Combined length longer than code bits available"); Debian 12 does not ship it, and a
# JPEG cannot be screened for this without decoding it. Every other UBSan check stays on, and
# AddressSanitizer still watches every memory access in stb. (The flag names the whole
# `shift` group, because g++ 12 in C++20 mode ignores -fno-sanitize=shift-exponent alone;
# the group's other check, shift-base, has nothing to find in C++20, where every left
# shift of a signed value is defined.) The input that found it is
# fuzz/corpus/image/crash-stb-jpeg-progressive-ac-past-marker.
function(stb_image_skip_known_shift source dir)
  set_property(SOURCE ${source} DIRECTORY ${dir} APPEND PROPERTY COMPILE_OPTIONS -fno-sanitize=shift)
endfunction()
