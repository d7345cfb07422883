// export/perfetto_encoder.cpp: see perfetto_encoder.h.
#include "export/perfetto_encoder.h"

#include <gapwatch/utf8_text.h>

#include <gapwatch/wire_primitives.h>

namespace gapwatch::exporter::perfetto {

namespace {
void putTag(std::string& out, uint32_t field, uint32_t wire_type) {
  wire::appendVarint(out, (uint64_t(field) << 3) | wire_type);
}
}  // namespace

void putVarint(std::string& out, uint32_t field, uint64_t value) {
  putTag(out, field, 0);
  wire::appendVarint(out, value);
}

void putFixed64(std::string& out, uint32_t field, uint64_t value) {
  putTag(out, field, 1);
  for (int i = 0; i < 8; ++i) out.push_back(char((value >> (8 * i)) & 0xff));
}

void putBytes(std::string& out, uint32_t field, std::string_view bytes) {
  putTag(out, field, 2);
  wire::appendVarint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

void putString(std::string& out, uint32_t field, std::string_view text) {
  if (isValidUtf8(text)) return putBytes(out, field, text);
  putBytes(out, field, validUtf8(text));
}

}  // namespace gapwatch::exporter::perfetto
