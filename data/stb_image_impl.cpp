// The one translation unit that compiles stb_image (Debian's libstb-dev), limited to the
// formats ImageFolder reads, decoding from memory only, and capped in size so a forged
// header cannot ask for gigabytes. Warnings are silenced for this file in CMakeLists.txt.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS 8192
#include <stb/stb_image.h>
