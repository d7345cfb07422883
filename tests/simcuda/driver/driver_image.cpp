// Reading a module image for its kernel and global names, the way the image itself declares them:
//
//  * PTX (text, NUL-terminated): `.entry NAME(` / `.visible .entry NAME(` declare kernels;
//    module-scope `.global` / `.const` declarations declare globals (size = type size x count).
//  * cubin (an ELF64 file, EM_CUDA = 190): the symbol table's STT_FUNC symbols marked as CUDA
//    entries (st_other bit 0x10, STO_CUDA_ENTRY) are the kernels; a GLOBAL STT_FUNC with its own
//    `.text.NAME` section counts too (older toolchains). STT_OBJECT symbols in `.nv.global*` or
//    `.nv.constantN` (N != 0, bank 0 holds kernel parameters) sections are globals.
//  * fatbin (magic 0xBA55ED50): a 16-byte header {magic u32, version u16, header size u16,
//    payload size u64}, then entries, each {kind u16 (1 = PTX, 2 = ELF), version u16, header
//    size u32, padded payload size u64, compressed size u32 at +0x10, ..., flags u64 at +0x28,
//    uncompressed size u64 at +0x38}
//    followed by its payload. nvcc compresses PTX entries by default (and every entry with
//    -Xfatbin -compress-all) with zstd, flag 0x8000, payload a zstd frame: those are decompressed
//    with libzstd. An entry in another compressed format (the older LZ4 scheme, flag 0x2000) is
//    skipped; the names then come from the other entries (a default nvcc fatbin always carries an
//    uncompressed cubin for each real architecture). The union of every entry's names is the
//    module's. Also accepted: the __fatBinC_Wrapper_t (magic 0x466243b1) nvcc embeds in host
//    objects, whose second word points to the fatbin.
#include "driver_image.h"

#include <stdint.h>
#include <string.h>
#include <zstd.h>

#include <algorithm>
#include <cctype>

namespace simcuda::driver {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint32_t kFatbinWrapperMagic = 0x466243b1u;
constexpr uint64_t kFatbinZstdFlag = 0x8000;
constexpr uint64_t kFatbinLz4Flag = 0x2000;

template <class T>
T read(const unsigned char* p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

void add_unique(std::vector<std::string>* v, const std::string& s) {
  if (!s.empty() && std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

void add_global(ImageSymbols* out, const std::string& name, size_t size) {
  for (auto& g : out->globals)
    if (g.name == name) return;
  out->globals.push_back({name, size});
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'; }

size_t ptx_type_size(const std::string& t) {
  if (t == ".b8" || t == ".u8" || t == ".s8" || t == ".pred") return 1;
  if (t == ".b16" || t == ".u16" || t == ".s16" || t == ".f16" || t == ".bf16") return 2;
  if (t == ".b32" || t == ".u32" || t == ".s32" || t == ".f32" || t == ".f16x2" || t == ".bf16x2") return 4;
  if (t == ".b64" || t == ".u64" || t == ".s64" || t == ".f64") return 8;
  if (t == ".b128") return 16;
  return 0;
}

// One module-scope declaration line: [.visible|.weak|.common] (.global|.const) [.align N] [.v2|.v4] .type NAME[N]...
void parse_ptx_declaration(const std::string& line, ImageSymbols* out) {
  std::vector<std::string> tok;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j])) && line[j] != ';' && line[j] != '=')
      ++j;
    if (j > i) tok.push_back(line.substr(i, j - i));
    if (j < line.size() && (line[j] == ';' || line[j] == '=')) break;
    i = j;
  }
  size_t k = 0;
  while (k < tok.size() && (tok[k] == ".visible" || tok[k] == ".weak" || tok[k] == ".common")) ++k;
  if (k >= tok.size() || (tok[k] != ".global" && tok[k] != ".const")) return;
  ++k;
  size_t elem = 0, vec = 1;
  for (; k < tok.size(); ++k) {
    if (tok[k] == ".align") {
      ++k;
      continue;
    }
    if (tok[k] == ".v2") vec = 2;
    else if (tok[k] == ".v4") vec = 4;
    else if (size_t s = ptx_type_size(tok[k])) elem = s;
    else if (tok[k][0] != '.') break;
  }
  if (k >= tok.size() || !elem) return;
  std::string decl = tok[k];
  size_t br = decl.find('[');
  std::string name = decl.substr(0, br);
  size_t count = 1;
  while (br != std::string::npos) {
    size_t close = decl.find(']', br);
    if (close == std::string::npos) break;
    std::string n = decl.substr(br + 1, close - br - 1);
    count *= n.empty() ? 1 : size_t(strtoull(n.c_str(), nullptr, 10));
    br = decl.find('[', close);
  }
  add_global(out, name, elem * vec * count);
}

void parse_ptx(const char* text, size_t len, ImageSymbols* out) {
  std::string s(text, len);
  int depth = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t eol = s.find('\n', pos);
    if (eol == std::string::npos) eol = s.size();
    std::string line = s.substr(pos, eol - pos);
    pos = eol + 1;
    if (size_t c = line.find("//"); c != std::string::npos) line.resize(c);
    if (depth == 0) {
      size_t e = line.find(".entry");
      if (e != std::string::npos && (e == 0 || std::isspace(static_cast<unsigned char>(line[e - 1]))) &&
          e + 6 < line.size() && std::isspace(static_cast<unsigned char>(line[e + 6]))) {
        size_t a = e + 6;
        while (a < line.size() && std::isspace(static_cast<unsigned char>(line[a]))) ++a;
        size_t b = a;
        while (b < line.size() && ident_char(line[b])) ++b;
        add_unique(&out->kernels, line.substr(a, b - a));
      } else {
        parse_ptx_declaration(line, out);
      }
    }
    for (char ch : line) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
    if (depth < 0) depth = 0;
  }
}

// The extent of an ELF64 image from its own header (section headers are last in nvcc's cubins;
// take the larger of their end and every section's end).
size_t elf_extent(const unsigned char* p) {
  uint64_t shoff = read<uint64_t>(p + 0x28);
  uint16_t shentsize = read<uint16_t>(p + 0x3a), shnum = read<uint16_t>(p + 0x3c);
  size_t end = size_t(shoff) + size_t(shentsize) * shnum;
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* sh = p + shoff + size_t(i) * shentsize;
    if (read<uint32_t>(sh + 4) == 8) continue;  // SHT_NOBITS
    end = std::max(end, size_t(read<uint64_t>(sh + 0x18) + read<uint64_t>(sh + 0x20)));
  }
  return end;
}

bool parse_elf(const unsigned char* p, size_t size, ImageSymbols* out) {
  if (size < 0x40 || memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2 /* ELFCLASS64 */) return false;
  uint64_t shoff = read<uint64_t>(p + 0x28);
  uint16_t shentsize = read<uint16_t>(p + 0x3a), shnum = read<uint16_t>(p + 0x3c), shstrndx = read<uint16_t>(p + 0x3e);
  if (shentsize < 0x40 || shoff + uint64_t(shentsize) * shnum > size || shstrndx >= shnum) return false;
  auto section = [&](uint16_t i) { return p + shoff + size_t(i) * shentsize; };
  auto in_bounds = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  const unsigned char* shstr_hdr = section(shstrndx);
  uint64_t shstr_off = read<uint64_t>(shstr_hdr + 0x18), shstr_size = read<uint64_t>(shstr_hdr + 0x20);
  if (!in_bounds(shstr_off, shstr_size)) return false;
  auto section_name = [&](uint16_t i) -> std::string {
    uint32_t n = read<uint32_t>(section(i));
    if (n >= shstr_size) return {};
    const char* s = reinterpret_cast<const char*>(p + shstr_off + n);
    return std::string(s, strnlen(s, size_t(shstr_size - n)));
  };
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* sh = section(i);
    if (read<uint32_t>(sh + 4) != 2 /* SHT_SYMTAB */) continue;
    uint64_t off = read<uint64_t>(sh + 0x18), len = read<uint64_t>(sh + 0x20), entsize = read<uint64_t>(sh + 0x38);
    uint32_t link = read<uint32_t>(sh + 0x28);
    if (entsize < 24 || link >= shnum || !in_bounds(off, len)) continue;
    const unsigned char* strh = section(uint16_t(link));
    uint64_t str_off = read<uint64_t>(strh + 0x18), str_size = read<uint64_t>(strh + 0x20);
    if (!in_bounds(str_off, str_size)) continue;
    for (uint64_t e = 0; e + entsize <= len; e += entsize) {
      const unsigned char* sym = p + off + e;
      uint32_t name_off = read<uint32_t>(sym);
      uint8_t info = sym[4], other = sym[5];
      uint16_t shndx = read<uint16_t>(sym + 6);
      uint64_t sym_size = read<uint64_t>(sym + 16);
      if (name_off >= str_size || shndx == 0 || shndx >= shnum) continue;
      const char* nm = reinterpret_cast<const char*>(p + str_off + name_off);
      std::string name(nm, strnlen(nm, size_t(str_size - name_off)));
      if (name.empty() || name[0] == '.' || name[0] == '$') continue;
      unsigned type = info & 0xf, bind = info >> 4;
      std::string sec = section_name(shndx);
      if (type == 2 /* STT_FUNC */) {
        if ((other & 0x10) || (bind == 1 /* GLOBAL */ && sec == ".text." + name)) add_unique(&out->kernels, name);
      } else if (type == 1 /* STT_OBJECT */) {
        bool global = sec.rfind(".nv.global", 0) == 0;
        bool constant = sec.rfind(".nv.constant", 0) == 0 && sec.rfind(".nv.constant0", 0) != 0;
        if (global || constant) add_global(out, name, size_t(sym_size));
      }
    }
  }
  return true;
}

bool parse_fatbin(const unsigned char* p, size_t size, ImageSymbols* out) {
  if ((size && size < 16) || read<uint32_t>(p) != kFatbinMagic) return false;
  uint16_t header = read<uint16_t>(p + 6);
  uint64_t payload = read<uint64_t>(p + 8);
  uint64_t total = header + payload;
  if (size && total > size) return false;
  uint64_t off = header;
  while (off + 16 <= total) {
    const unsigned char* e = p + off;
    uint16_t kind = read<uint16_t>(e);
    uint32_t eh = read<uint32_t>(e + 4);
    uint64_t ps = read<uint64_t>(e + 8);
    if (eh < 16 || off + eh + ps > total) break;
    uint64_t flags = eh >= 0x30 ? read<uint64_t>(e + 0x28) : 0;
    const unsigned char* data = e + eh;
    std::vector<unsigned char> inflated;
    bool zstd_frame = ps >= 4 && read<uint32_t>(data) == 0xFD2FB528u;
    if ((flags & kFatbinZstdFlag) || zstd_frame) {
      // The payload is padded: the frame is the first `compressed size` (+0x10) bytes of it.
      size_t frame = ZSTD_findFrameCompressedSize(data, size_t(ps));
      if (ZSTD_isError(frame)) {
        uint32_t field = read<uint32_t>(e + 0x10);
        frame = field && field <= ps ? field : size_t(ps);
      }
      unsigned long long n = ZSTD_getFrameContentSize(data, frame);
      if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN) {
        n = eh >= 0x40 ? read<uint64_t>(e + 0x38) : 0;  // the entry's own uncompressed size
      }
      inflated.resize(size_t(n));
      size_t got = n ? ZSTD_decompress(inflated.data(), inflated.size(), data, frame) : 0;
      if (!n || ZSTD_isError(got)) {
        out->had_compressed = true;
        off += eh + ps;
        continue;
      }
      inflated.resize(got);
    } else if (flags & kFatbinLz4Flag) {
      out->had_compressed = true;  // the older LZ4 scheme: not read, other entries still are
      off += eh + ps;
      continue;
    }
    const unsigned char* body = inflated.empty() ? data : inflated.data();
    size_t body_size = inflated.empty() ? size_t(ps) : inflated.size();
    if (kind == 1) {
      parse_ptx(reinterpret_cast<const char*>(body), strnlen(reinterpret_cast<const char*>(body), body_size), out);
    } else if (kind == 2) {
      parse_elf(body, body_size, out);
    }
    off += eh + ps;
  }
  return true;
}

}  // namespace

ImageKind parse_image(const void* image, size_t size, ImageSymbols* out) {
  if (!image) return ImageKind::kInvalid;
  const auto* p = static_cast<const unsigned char*>(image);
  if ((!size || size >= 16) && read<uint32_t>(p) == kFatbinWrapperMagic) {
    const void* inner = read<const void*>(p + 8);
    return inner && parse_fatbin(static_cast<const unsigned char*>(inner), 0, out) ? ImageKind::kFatbin
                                                                                   : ImageKind::kInvalid;
  }
  if ((!size || size >= 16) && read<uint32_t>(p) == kFatbinMagic)
    return parse_fatbin(p, size, out) ? ImageKind::kFatbin : ImageKind::kInvalid;
  if ((!size || size >= 0x40) && memcmp(p, "\x7f" "ELF", 4) == 0) {
    size_t n = size ? size : elf_extent(p);
    return parse_elf(p, n, out) ? ImageKind::kCubin : ImageKind::kInvalid;
  }
  // PTX: text that declares a version or a target, NUL-terminated (or `size` bytes of a file).
  const char* text = static_cast<const char*>(image);
  size_t len = size ? strnlen(text, size) : strlen(text);
  std::string head(text, std::min<size_t>(len, 1 << 20));
  if (head.find(".version") == std::string::npos && head.find(".target") == std::string::npos)
    return ImageKind::kInvalid;
  parse_ptx(text, len, out);
  return ImageKind::kPtx;
}

}  // namespace simcuda::driver
