// analysis/nccl_kernel_name.cpp: see nccl_kernel_name.h.
#include "analysis/nccl_kernel_name.h"

#include <array>
#include <cctype>

namespace gapwatch::analysis {
namespace {

bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool isLetter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

bool startsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

struct CollectiveSpelling {
  std::string_view spelling;
  NcclCollective collective;
};

// Longest spellings first, so that "ReduceScatter" is not taken for "Reduce" and "SendRecv" not
// for "Send".
constexpr std::array<CollectiveSpelling, 9> kSpellings{{
    {"ReduceScatter", NcclCollective::kReduceScatter},
    {"AllReduce", NcclCollective::kAllReduce},
    {"AllGather", NcclCollective::kAllGather},
    {"Broadcast", NcclCollective::kBroadcast},
    {"SendRecv", NcclCollective::kSendRecv},
    {"Generic", NcclCollective::kGeneric},
    {"Reduce", NcclCollective::kReduce},
    {"Send", NcclCollective::kSendRecv},
    {"Recv", NcclCollective::kSendRecv},
}};

std::optional<NcclCollective> collectiveAtStartOf(std::string_view text) {
  for (const CollectiveSpelling& s : kSpellings) {
    if (startsWithNoCase(text, s.spelling)) return s.collective;
  }
  return std::nullopt;
}

// The families whose collective follows the prefix as its own "_"-separated word.
constexpr std::array<std::string_view, 4> kFamilyPrefixes{
    "ncclSymkDevKernel_", "ncclSymDevKernel_", "ncclDevKernel_", "ncclKernel_"};

// Tries to read an NCCL kernel name that begins at `text` (at "nccl").
std::optional<NcclCollective> parseAt(std::string_view text) {
  for (std::string_view prefix : kFamilyPrefixes) {
    if (text.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = text.substr(prefix.size());
    std::size_t word_end = 0;
    while (word_end < rest.size() && isLetter(rest[word_end])) ++word_end;
    const auto collective = collectiveAtStartOf(rest.substr(0, word_end));
    // A family member with a collective this version does not know is still NCCL's.
    return collective.value_or(NcclCollective::kGeneric);
  }
  // Releases before 2.12 named kernels nccl<Coll><Algo><Proto>Kernel_<op>_<type>.
  std::string_view rest = text.substr(4);
  const auto collective = collectiveAtStartOf(rest);
  if (!collective || *collective == NcclCollective::kGeneric) return std::nullopt;
  std::size_t identifier_end = 0;
  while (identifier_end < text.size() && isIdentifierChar(text[identifier_end])) ++identifier_end;
  if (text.substr(0, identifier_end).find("Kernel") == std::string_view::npos) return std::nullopt;
  return collective;
}

// Where the function's own identifier starts: after a "void " of a demangled signature and after
// the "_Z<length>" of a mangled one.
std::string_view identifierOf(std::string_view name) {
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  if (name.substr(0, 5) == "void ") name.remove_prefix(5);
  if (name.substr(0, 2) == "_Z") {
    std::size_t digits = 2;
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
    if (digits > 2) name.remove_prefix(digits);
  }
  return name;
}

}  // namespace

std::string_view ncclCollectiveName(NcclCollective collective) {
  switch (collective) {
    case NcclCollective::kAllReduce: return "all_reduce";
    case NcclCollective::kAllGather: return "all_gather";
    case NcclCollective::kReduceScatter: return "reduce_scatter";
    case NcclCollective::kBroadcast: return "broadcast";
    case NcclCollective::kReduce: return "reduce";
    case NcclCollective::kSendRecv: return "send_recv";
    case NcclCollective::kGeneric: return "generic";
    case NcclCollective::kAllToAll: return "all_to_all";
    case NcclCollective::kGather: return "gather";
    case NcclCollective::kScatter: return "scatter";
  }
  return "generic";
}

std::optional<NcclCollective> parseNcclKernelName(std::string_view kernel_name) {
  // "nccl" may start the name, follow a mangled length ("_Z38nccl...") or a "void "; it must not
  // be the tail of a longer word ("myncclKernel_" is someone else's kernel).
  for (std::size_t at = kernel_name.find("nccl"); at != std::string_view::npos;
       at = kernel_name.find("nccl", at + 1)) {
    if (at > 0 && (isLetter(kernel_name[at - 1]) || kernel_name[at - 1] == '_')) continue;
    if (const auto collective = parseAt(kernel_name.substr(at))) return collective;
  }
  // HTA counts every kernel whose name starts with "nccl" as communication; so do we, with the
  // collective unknown.
  if (identifierOf(kernel_name).substr(0, 4) == "nccl") return NcclCollective::kGeneric;
  return std::nullopt;
}

std::optional<NcclCollective> ncclCollectiveOfOp(v1::NcclOp op) {
  switch (op) {
    case v1::NCCL_OP_ALL_REDUCE: return NcclCollective::kAllReduce;
    case v1::NCCL_OP_BROADCAST: return NcclCollective::kBroadcast;
    case v1::NCCL_OP_REDUCE: return NcclCollective::kReduce;
    case v1::NCCL_OP_ALL_GATHER: return NcclCollective::kAllGather;
    case v1::NCCL_OP_REDUCE_SCATTER: return NcclCollective::kReduceScatter;
    case v1::NCCL_OP_SEND:
    case v1::NCCL_OP_RECV: return NcclCollective::kSendRecv;
    case v1::NCCL_OP_ALL_TO_ALL: return NcclCollective::kAllToAll;
    case v1::NCCL_OP_GATHER: return NcclCollective::kGather;
    case v1::NCCL_OP_SCATTER: return NcclCollective::kScatter;
    default: return std::nullopt;
  }
}

}  // namespace gapwatch::analysis
