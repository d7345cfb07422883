// wire_schema_gen: writes <gapwatch/wire_schema.h>, the field numbers and enum values of
// gapwatch.v1 as plain C++ constants, for the code that reads or writes the wire by hand.
//
//   wire_schema_gen OUT.h
//
// Why a host program over the protoc-generated C++ rather than a protoc plugin or a script: the
// descriptors linked into it are exactly the ones libprotobuf uses to read recordings
// (gapwatch_proto), so the header cannot disagree with the parser, and it needs neither libprotoc
// nor a .proto parser of our own. It runs at build time; the header it writes has no libprotobuf
// in it, so the injected library may include it. OUT is rewritten only when its text changes, so
// regenerating an unchanged schema rebuilds nothing.
#include <gapwatch/v1/events.pb.h>
#include <gapwatch/v1/stream.pb.h>

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;

// SNAKE_OR_lower_case -> PascalCase; a letter right after a digit keeps its case, so that H2D,
// P2P and FLOAT8_E4M3 stay readable (kH2D, kP2P, kFloat8E4M3).
std::string pascalCase(const std::string& name) {
  std::string out;
  bool word_start = true;
  char previous = '_';
  for (char c : name) {
    if (c == '_') {
      word_start = true;
      previous = c;
      continue;
    }
    const unsigned char u = static_cast<unsigned char>(c);
    if (word_start) out += static_cast<char>(std::toupper(u));
    else if (std::isdigit(static_cast<unsigned char>(previous))) out += c;
    else out += static_cast<char>(std::tolower(u));
    word_start = false;
    previous = c;
  }
  return out;
}

// API_KIND_MEMCPY_ASYNC in enum ApiKind -> MemcpyAsync: the enum's own prefix (the schema's
// convention, checked by proto_schema_test) is dropped, as the namespace already says it.
std::string enumValueName(const EnumDescriptor& e, const std::string& value) {
  std::string prefix;
  for (std::size_t i = 0; i < e.name().size(); ++i) {
    const char c = e.name()[i];
    if (i > 0 && std::isupper(static_cast<unsigned char>(c)) &&
        !std::isupper(static_cast<unsigned char>(e.name()[i - 1])))
      prefix += '_';
    prefix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  prefix += '_';
  const std::string rest = value.rfind(prefix, 0) == 0 ? value.substr(prefix.size()) : value;
  return pascalCase(rest);
}

const char* fieldType(const FieldDescriptor& f) {
  switch (f.type()) {
    case FieldDescriptor::TYPE_UINT32: return "kUint32";
    case FieldDescriptor::TYPE_UINT64: return "kUint64";
    case FieldDescriptor::TYPE_INT32: return "kInt32";
    case FieldDescriptor::TYPE_INT64: return "kInt64";
    case FieldDescriptor::TYPE_SINT32: return "kSint32";
    case FieldDescriptor::TYPE_SINT64: return "kSint64";
    case FieldDescriptor::TYPE_BOOL: return "kBool";
    case FieldDescriptor::TYPE_ENUM: return "kEnum";
    case FieldDescriptor::TYPE_FIXED32: return "kFixed32";
    case FieldDescriptor::TYPE_FIXED64: return "kFixed64";
    case FieldDescriptor::TYPE_SFIXED32: return "kSfixed32";
    case FieldDescriptor::TYPE_SFIXED64: return "kSfixed64";
    case FieldDescriptor::TYPE_FLOAT: return "kFloat";
    case FieldDescriptor::TYPE_DOUBLE: return "kDouble";
    case FieldDescriptor::TYPE_STRING: return "kString";
    case FieldDescriptor::TYPE_BYTES: return "kBytes";
    case FieldDescriptor::TYPE_MESSAGE: return "kMessage";
    case FieldDescriptor::TYPE_GROUP: break;
  }
  return nullptr;  // groups: not in proto3, so not in this schema
}

const char* wireType(const FieldDescriptor& f) {
  if (f.is_packed()) return "kLengthDelimited";
  switch (f.type()) {
    case FieldDescriptor::TYPE_FIXED64: case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_DOUBLE:
      return "kFixed64";
    case FieldDescriptor::TYPE_FIXED32: case FieldDescriptor::TYPE_SFIXED32:
    case FieldDescriptor::TYPE_FLOAT:
      return "kFixed32";
    case FieldDescriptor::TYPE_STRING: case FieldDescriptor::TYPE_BYTES:
    case FieldDescriptor::TYPE_MESSAGE:
      return "kLengthDelimited";
    default:
      return "kVarint";
  }
}

class Writer {
 public:
  bool ok = true;

  void enumType(const EnumDescriptor& e, const std::string& indent) {
    out_ << indent << "// enum " << e.full_name() << "\n";
    out_ << indent << "namespace " << e.name() << " {\n";
    bool negative = false;
    int max_value = 0;
    for (int i = 0; i < e.value_count(); ++i) {
      negative |= e.value(i)->number() < 0;
      if (e.value(i)->number() > max_value) max_value = e.value(i)->number();
    }
    const char* type = negative ? "int32_t" : "uint32_t";
    std::set<std::string> names = {"kMaxValue"};
    for (int i = 0; i < e.value_count(); ++i) {
      const auto& v = *e.value(i);
      const std::string name = "k" + enumValueName(e, v.name());
      if (!names.insert(name).second) fail(e.full_name() + ": two values named " + name);
      out_ << indent << "inline constexpr " << type << " " << name << " = " << v.number() << ";  // "
           << v.name() << "\n";
    }
    out_ << indent << "inline constexpr " << type << " kMaxValue = " << max_value << ";\n";
    out_ << indent << "}  // namespace " << e.name() << "\n\n";
  }

  void message(const Descriptor& m, const std::string& indent) {
    out_ << indent << "// message " << m.full_name() << "\n";
    out_ << indent << "namespace " << m.name() << " {\n";
    const std::string inner = indent + "  ";
    for (int i = 0; i < m.enum_type_count(); ++i) enumType(*m.enum_type(i), inner);
    for (int i = 0; i < m.nested_type_count(); ++i) message(*m.nested_type(i), inner);
    int max_number = 0;
    std::vector<std::string> fields;
    // The per-message constants below, and every name already given a field's constants.
    std::set<std::string> names = {"kFieldCount", "kMaxFieldNumber", "kFields"};
    for (int i = 0; i < m.field_count(); ++i) {
      const FieldDescriptor& f = *m.field(i);
      const char* type = fieldType(f);
      if (!type) {
        fail(f.full_name() + ": groups are not supported");
        continue;
      }
      const std::string name = "k" + pascalCase(f.name());
      std::string note;
      if (f.real_containing_oneof()) note = "  // oneof " + f.real_containing_oneof()->name();
      out_ << inner << "inline constexpr uint32_t " << name << " = " << f.number() << ";" << note
           << "\n";
      const bool presence =
          f.has_presence() && !f.is_repeated() && f.type() != FieldDescriptor::TYPE_MESSAGE;
      out_ << inner << "inline constexpr Field " << name << "Field{.number = " << f.number()
           << ", .wire_type = WireType::" << wireType(f) << ", .type = FieldType::" << type
           << ", .repeated = " << (f.is_repeated() ? "true" : "false")
           << ", .packed = " << (f.is_packed() ? "true" : "false")
           << ", .explicit_presence = " << (presence ? "true" : "false") << "};\n";
      for (const std::string& n : {name, name + "Field"})
        if (!names.insert(n).second) fail(f.full_name() + ": its constant " + n + " is taken");
      fields.push_back(name + "Field");
      if (f.number() > max_number) max_number = f.number();
    }
    // Code that handles every field (the reader's fast path) checks these, so that a field added
    // to the schema is not silently left to a slower path.
    out_ << inner << "inline constexpr uint32_t kFieldCount = " << m.field_count() << ";\n";
    out_ << inner << "inline constexpr uint32_t kMaxFieldNumber = " << max_number << ";\n";
    if (!fields.empty()) {
      out_ << inner << "inline constexpr Field kFields[] = {\n";
      for (const std::string& field : fields) out_ << inner << "    " << field << ",\n";
      out_ << inner << "};\n";
    }
    out_ << indent << "}  // namespace " << m.name() << "\n\n";
  }

  void file(const FileDescriptor& f) {
    out_ << "// ---- " << f.name() << " ----\n\n";
    for (int i = 0; i < f.enum_type_count(); ++i) enumType(*f.enum_type(i), "");
    for (int i = 0; i < f.message_type_count(); ++i) message(*f.message_type(i), "");
  }

  std::string text() const { return out_.str(); }
  std::ostringstream& out() { return out_; }

 private:
  void fail(const std::string& why) {
    std::fprintf(stderr, "wire_schema_gen: %s\n", why.c_str());
    ok = false;
  }
  std::ostringstream out_;
};

// The schema's files, dependencies first (events.proto before stream.proto, which imports it).
void collect(const FileDescriptor* f, std::vector<const FileDescriptor*>& order,
             std::set<const FileDescriptor*>& seen) {
  if (!seen.insert(f).second) return;
  for (int i = 0; i < f->dependency_count(); ++i) collect(f->dependency(i), order, seen);
  if (f->package() == "gapwatch.v1") order.push_back(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: wire_schema_gen OUT.h\n");
    return 2;
  }
  std::vector<const FileDescriptor*> files;
  std::set<const FileDescriptor*> seen;
  collect(gapwatch::v1::Frame::descriptor()->file(), files, seen);

  Writer w;
  w.out() << "// gapwatch/wire_schema.h: the field numbers and enum values of gapwatch.v1.\n"
             "//\n"
             "// GENERATED at build time by proto/wire_schema_gen.cpp from proto/gapwatch/v1/*.proto;"
             " do not edit.\n"
             "// The one definition of the wire format for code that writes or reads it by hand (the"
             "\n// injected library's encoder, the reader's batch fast path, the test writers): a"
             " field\n// renumbered or a value renamed in a .proto changes this header, and code still"
             " using\n// the old name stops compiling. libprotobuf-free (docs/recording-format.md).\n"
             "//\n"
             "// Per message M: M::kField (the number) and M::kFieldField (number, wire type, type);"
             "\n// per enum E: E::kValue with the E_ prefix dropped (ApiKind::kMemcpyAsync is"
             "\n// API_KIND_MEMCPY_ASYNC).\n"
             "#pragma once\n\n"
             "#include <cstdint>\n\n"
             "#include <gapwatch/wire_primitives.h>\n\n"
             "namespace gapwatch::wire {\n\n";
  for (const FileDescriptor* f : files) w.file(*f);
  w.out() << "}  // namespace gapwatch::wire\n";
  if (!w.ok) return 1;

  const std::string text = w.text();
  {
    std::ifstream in(argv[1], std::ios::binary);
    const std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in && old == text) return 0;  // unchanged: keep its time stamp
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "wire_schema_gen: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
