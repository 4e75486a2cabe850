// The AMD code-object layer (see code_object.hpp): IR -> relocatable object with LLVM's
// TargetMachine, relocatable -> HSACO with lld in-process, and readers for what a HSACO
// says about itself (ELF header, metadata note, machine code). The comgr linker is in
// comgr.cpp because it shares nothing with LLVM 22 but the bytes.
#include "codegen/amdgpu/code_object.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "lld/Common/Driver.h"
#include "llvm-c/Target.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstPrinter.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/TargetParser.h"
#include "llvm/TargetParser/Triple.h"
#include "tl/error.hpp"

LLD_HAS_DRIVER(elf)

namespace tl::amd {
namespace {

constexpr const char* kTriple = "amdgcn-amd-amdhsa";

// Only AMDGPU: other targets are the business of their own folders, and initializing
// everything would cost start-up time in every process that touches AMD code.
const llvm::Target& amdgpu_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUDisassembler();
  });
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(llvm::Triple(kTriple), err);
  if (!t) throw compile_error("AMDGPU target is not available in this LLVM: " + err);
  return *t;
}

std::string to_string(llvm::Error e) { return llvm::toString(std::move(e)); }

// "gfx90a:sramecc+:xnack-" -> cpu "gfx90a", features "+sramecc,-xnack": the target-ID
// spelling ROCm uses, turned into what LLVM's subtarget wants.
std::pair<std::string, std::string> split_target_id(const std::string& target_id) {
  std::string cpu = target_id.substr(0, target_id.find(':'));
  std::string features;
  for (size_t pos = target_id.find(':'); pos != std::string::npos;) {
    size_t next = target_id.find(':', pos + 1);
    std::string item = target_id.substr(pos + 1, next == std::string::npos ? std::string::npos
                                                                          : next - pos - 1);
    pos = next;
    if (item.empty()) continue;
    char sign = item.back();
    if (sign != '+' && sign != '-')
      throw compile_error("target ID '" + target_id + "': feature '" + item +
                          "' must end in + or -");
    if (!features.empty()) features += ',';
    features += sign + item.substr(0, item.size() - 1);
  }
  return {cpu, features};
}

// Checked before any LLVM object is built for it: LLVM only warns on stderr about an
// unknown processor and goes on with a generic one.
void require_known_processor(const std::string& cpu, const char* who) {
  if (llvm::AMDGPU::parseArchAMDGCN(cpu) == llvm::AMDGPU::GK_NONE)
    throw compile_error(std::string(who) + ": LLVM does not know the AMDGPU processor '" + cpu +
                        "'");
}

// ---------------------------------------------------------------------------------
// ELF helpers
// ---------------------------------------------------------------------------------
using Elf = llvm::object::ELF64LEObjectFile;

std::optional<Elf> open_elf(const std::vector<uint8_t>& bytes, std::string* why) {
  llvm::StringRef data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (bytes.size() < llvm::ELF::EI_NIDENT || !data.starts_with("\x7f" "ELF")) {
    if (why) *why = "not an ELF file";
    return std::nullopt;
  }
  if (bytes[llvm::ELF::EI_CLASS] != llvm::ELF::ELFCLASS64 ||
      bytes[llvm::ELF::EI_DATA] != llvm::ELF::ELFDATA2LSB) {
    if (why) *why = "not a little-endian ELF64 file";
    return std::nullopt;
  }
  auto obj = Elf::create(llvm::MemoryBufferRef(data, "hsaco"));
  if (!obj) {
    std::string msg = to_string(obj.takeError());
    if (why) *why = msg;
    return std::nullopt;
  }
  return std::move(*obj);
}

Elf open_elf_or_throw(const std::vector<uint8_t>& bytes, const char* what) {
  std::string why;
  auto obj = open_elf(bytes, &why);
  if (!obj) throw compile_error(std::string(what) + ": " + why);
  return std::move(*obj);
}

int abi_version_of(const Elf& obj) {
  return obj.getELFFile().getHeader().e_ident[llvm::ELF::EI_ABIVERSION];
}

// The processor named by e_flags, or "" when the value names none. LLVM's own lookup
// (tryGetCPUName) reaches llvm_unreachable on a value it does not know, which a release
// build turns into garbage (found by tests/fuzz/code_object_fuzz.cpp): only values that
// name a GCN processor in LLVM's ELF.h are passed to it.
std::string mach_name(const Elf& obj) {
  namespace E = llvm::ELF;
  static const std::set<unsigned> known = {
      E::EF_AMDGPU_MACH_AMDGCN_GFX600, E::EF_AMDGPU_MACH_AMDGCN_GFX601, E::EF_AMDGPU_MACH_AMDGCN_GFX700,
      E::EF_AMDGPU_MACH_AMDGCN_GFX701, E::EF_AMDGPU_MACH_AMDGCN_GFX702, E::EF_AMDGPU_MACH_AMDGCN_GFX703,
      E::EF_AMDGPU_MACH_AMDGCN_GFX704, E::EF_AMDGPU_MACH_AMDGCN_GFX801, E::EF_AMDGPU_MACH_AMDGCN_GFX802,
      E::EF_AMDGPU_MACH_AMDGCN_GFX803, E::EF_AMDGPU_MACH_AMDGCN_GFX810, E::EF_AMDGPU_MACH_AMDGCN_GFX900,
      E::EF_AMDGPU_MACH_AMDGCN_GFX902, E::EF_AMDGPU_MACH_AMDGCN_GFX904, E::EF_AMDGPU_MACH_AMDGCN_GFX906,
      E::EF_AMDGPU_MACH_AMDGCN_GFX908, E::EF_AMDGPU_MACH_AMDGCN_GFX909, E::EF_AMDGPU_MACH_AMDGCN_GFX90C,
      E::EF_AMDGPU_MACH_AMDGCN_GFX1010, E::EF_AMDGPU_MACH_AMDGCN_GFX1011, E::EF_AMDGPU_MACH_AMDGCN_GFX1012,
      E::EF_AMDGPU_MACH_AMDGCN_GFX1030, E::EF_AMDGPU_MACH_AMDGCN_GFX1031, E::EF_AMDGPU_MACH_AMDGCN_GFX1032,
      E::EF_AMDGPU_MACH_AMDGCN_GFX1033, E::EF_AMDGPU_MACH_AMDGCN_GFX602, E::EF_AMDGPU_MACH_AMDGCN_GFX705,
      E::EF_AMDGPU_MACH_AMDGCN_GFX805, E::EF_AMDGPU_MACH_AMDGCN_GFX1035, E::EF_AMDGPU_MACH_AMDGCN_GFX1034,
      E::EF_AMDGPU_MACH_AMDGCN_GFX90A, E::EF_AMDGPU_MACH_AMDGCN_GFX1100, E::EF_AMDGPU_MACH_AMDGCN_GFX1013,
      E::EF_AMDGPU_MACH_AMDGCN_GFX1150, E::EF_AMDGPU_MACH_AMDGCN_GFX1103, E::EF_AMDGPU_MACH_AMDGCN_GFX1036,
      E::EF_AMDGPU_MACH_AMDGCN_GFX1101, E::EF_AMDGPU_MACH_AMDGCN_GFX1102, E::EF_AMDGPU_MACH_AMDGCN_GFX1200,
      E::EF_AMDGPU_MACH_AMDGCN_GFX1250, E::EF_AMDGPU_MACH_AMDGCN_GFX1151, E::EF_AMDGPU_MACH_AMDGCN_GFX942,
      E::EF_AMDGPU_MACH_AMDGCN_GFX1201, E::EF_AMDGPU_MACH_AMDGCN_GFX950, E::EF_AMDGPU_MACH_AMDGCN_GFX1152,
      E::EF_AMDGPU_MACH_AMDGCN_GFX1153, E::EF_AMDGPU_MACH_AMDGCN_GFX1251};
  if (!known.count(obj.getPlatformFlags() & E::EF_AMDGPU_MACH)) return {};
  std::optional<llvm::StringRef> cpu = obj.tryGetCPUName();
  return cpu ? cpu->str() : std::string();
}

// e_flags feature bits of code object v4+ (v3 had single on/off bits; older ones are
// not produced by anything we support). "any" is the absence of a setting.
std::string target_id_of(const Elf& obj) {
  std::string id = mach_name(obj);
  unsigned flags = obj.getPlatformFlags();
  if (abi_version_of(obj) < llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V4) return id;
  switch (flags & llvm::ELF::EF_AMDGPU_FEATURE_SRAMECC_V4) {
    case llvm::ELF::EF_AMDGPU_FEATURE_SRAMECC_ON_V4: id += ":sramecc+"; break;
    case llvm::ELF::EF_AMDGPU_FEATURE_SRAMECC_OFF_V4: id += ":sramecc-"; break;
    default: break;
  }
  switch (flags & llvm::ELF::EF_AMDGPU_FEATURE_XNACK_V4) {
    case llvm::ELF::EF_AMDGPU_FEATURE_XNACK_ON_V4: id += ":xnack+"; break;
    case llvm::ELF::EF_AMDGPU_FEATURE_XNACK_OFF_V4: id += ":xnack-"; break;
    default: break;
  }
  return id;
}

// The payload ("desc") of the metadata note: an "AMDGPU" note of type NT_AMDGPU_METADATA
// in any SHT_NOTE section. Empty optional when there is none.
std::optional<std::string> metadata_blob(const Elf& obj) {
  const auto& file = obj.getELFFile();
  auto sections = file.sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return std::nullopt;
  }
  for (const auto& shdr : *sections) {
    if (shdr.sh_type != llvm::ELF::SHT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (const auto& note : file.notes(shdr, err)) {
      if (note.getName() == "AMDGPU" && note.getType() == llvm::ELF::NT_AMDGPU_METADATA) {
        std::string blob = note.getDescAsStringRef(shdr.sh_addralign).str();
        llvm::consumeError(std::move(err));
        return blob;
      }
    }
    llvm::consumeError(std::move(err));
  }
  return std::nullopt;
}

// MessagePack encodes small non-negative integers as either Int or UInt depending on
// the writer; accept both.
std::optional<int64_t> get_int(llvm::msgpack::MapDocNode& map, llvm::StringRef key) {
  auto it = map.find(key);
  if (it == map.end()) return std::nullopt;
  const llvm::msgpack::DocNode& n = it->second;
  if (n.getKind() == llvm::msgpack::Type::Int) return n.getInt();
  if (n.getKind() == llvm::msgpack::Type::UInt) return static_cast<int64_t>(n.getUInt());
  return std::nullopt;
}

std::optional<std::string> get_string(llvm::msgpack::MapDocNode& map, llvm::StringRef key) {
  auto it = map.find(key);
  if (it == map.end() || it->second.getKind() != llvm::msgpack::Type::String) return std::nullopt;
  return it->second.getString().str();
}

// ---------------------------------------------------------------------------------
// Private temporary directory for lld, removed on every path out.
// ---------------------------------------------------------------------------------
// Where: $TMPDIR where it is set, else /dev/shm where it is a directory this process may
// write, else /tmp. lld creates its output as a temporary file it renames, and tl
// creates, reads and removes the rest: on a disk file system these metadata operations
// wait for the journal, and a link of an RMSNorm-size kernel took 4 ms of wall time
// there (0.25 ms of CPU) against 0.3 ms in memory (tmpfs) on the development VM, where
// /tmp is on the disk (bench/results/compile-time-2026-11-29).
std::string temp_base() {
  const char* base = std::getenv("TMPDIR");
  if (base && *base) return base;
  struct stat st{};
  if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  return "/tmp";
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = temp_base() + "/tl-lld-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data()))  // mkdtemp creates the directory with mode 0700
      throw compile_error("link_hsaco: cannot create a temporary directory from " + pattern +
                          ": " + std::strerror(errno));
    path_ = buf.data();
  }
  ~TempDir() {
    if (DIR* d = opendir(path_.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") unlink((path_ + "/" + name).c_str());
      }
      closedir(d);
    }
    rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw compile_error("link_hsaco: cannot create " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      close(fd);
      throw compile_error("link_hsaco: cannot write " + path + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
}

std::vector<uint8_t> read_file(const std::string& path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf) throw compile_error("link_hsaco: lld produced no readable output " + path + ": " +
                                buf.getError().message());
  const auto* p = reinterpret_cast<const uint8_t*>((*buf)->getBufferStart());
  return std::vector<uint8_t>(p, p + (*buf)->getBufferSize());
}

std::mutex lld_mutex;
bool lld_unusable = false;  // set when lld says its state is corrupt; guarded by lld_mutex

// -----------------------------------------------------------------------------------
// Per-architecture facts as data, one row per processor (occupancy and descriptor reading).
// -----------------------------------------------------------------------------------
struct ArchLimits {
  const char* arch;
  int vgprs_per_simd_lane;  // unified VGPR+AGPR file per lane per SIMD
  int vgpr_granule;         // allocation granule, in registers (also the descriptor's
                            // GRANULATED_WORKITEM_VGPR_COUNT unit in wave64)
  int lds_per_cu;           // bytes
  int max_waves_per_simd;
  int simds_per_cu;
  int sgprs_for_max_waves;  // more SGPRs per wave (VCC etc. included) cost one wave
};
constexpr ArchLimits kArchLimits[] = {
    {"gfx90a", 512, 8, 64 * 1024, 8, 4, 100},
    {"gfx942", 512, 8, 64 * 1024, 8, 4, 100},
    {"gfx950", 512, 8, 160 * 1024, 8, 4, 100},
};

const ArchLimits* find_limits(const std::string& arch) {
  std::string cpu = arch.substr(0, arch.find(':'));
  for (const auto& row : kArchLimits)
    if (cpu == row.arch) return &row;
  return nullptr;
}

// The 64-byte kernel descriptor "<kernel>.kd" (AMDGPUUsage, "Kernel Descriptor"):
// COMPUTE_PGM_RSRC1 is the dword at byte 48, its bits 5:0 are
// GRANULATED_WORKITEM_VGPR_COUNT. Returns the raw field, or nullopt when the symbol or
// its bytes cannot be found.
std::optional<unsigned> granulated_vgpr_field(const Elf& obj, const std::string& kernel) {
  const std::string want = kernel + ".kd";
  auto look = [&](auto range) -> std::optional<unsigned> {
    for (const llvm::object::ELFSymbolRef& sym : range) {
      auto name = sym.getName();
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (*name != want) continue;
      auto addr = sym.getValue();
      auto sec = sym.getSection();
      if (!addr || !sec || *sec == obj.section_end()) {
        if (!addr) llvm::consumeError(addr.takeError());
        if (!sec) llvm::consumeError(sec.takeError());
        return std::nullopt;
      }
      auto contents = (*sec)->getContents();
      if (!contents) {
        llvm::consumeError(contents.takeError());
        return std::nullopt;
      }
      // In a HSACO the symbol value is a virtual address; in a relocatable object it is
      // an offset in its section (whose address is 0). Either way, subtract.
      uint64_t offset = *addr - (*sec)->getAddress();
      if (offset + 64 > contents->size()) return std::nullopt;
      uint32_t rsrc1;
      std::memcpy(&rsrc1, contents->data() + offset + 48, 4);
      return rsrc1 & 0x3f;
    }
    return std::nullopt;
  };
  if (auto v = look(obj.symbols())) return v;
  return look(obj.getDynamicSymbolIterators());
}

}  // namespace

// -----------------------------------------------------------------------------------
// IR -> relocatable object
// -----------------------------------------------------------------------------------
std::vector<uint8_t> compile_ir_to_object(const std::string& llvm_ir, const std::string& mcpu,
                                          const std::string& features, int opt_level) {
  const llvm::Target& target = amdgpu_target();
  if (opt_level < 0 || opt_level > 3)
    throw compile_error("compile_ir_to_object: opt_level must be 0..3, got " +
                        std::to_string(opt_level));
  auto [cpu, id_features] = split_target_id(mcpu);
  require_known_processor(cpu, "compile_ir_to_object");
  std::string all_features = id_features;
  if (!features.empty()) all_features += (all_features.empty() ? "" : ",") + features;

  llvm::LLVMContext ctx;
  // Without a handler, LLVM prints backend errors (LDS over the limit, unsupported
  // calls) to stderr and calls exit(1). Collect them instead and throw after codegen;
  // a plain function pointer, because nothing may be thrown through LLVM.
  std::string backend_errors;
  ctx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* info, void* sink) {
        if (info->getSeverity() != llvm::DS_Error) return;  // warnings, remarks: dropped
        auto& out = *static_cast<std::string*>(sink);
        llvm::raw_string_ostream os(out);
        llvm::DiagnosticPrinterRawOStream printer(os);
        if (!out.empty()) os << "\n";
        info->print(printer);
      },
      &backend_errors);
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> module = llvm::parseIR(
      llvm::MemoryBufferRef(llvm::StringRef(llvm_ir), "kernel.ll"), diag, ctx);
  if (!module) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    diag.print("tl", os, /*ShowColors=*/false);
    throw compile_error("compile_ir_to_object: cannot parse LLVM IR: " + msg);
  }
  llvm::Triple triple(kTriple);
  module->setTargetTriple(triple);
  {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyModule(*module, &os))
      throw compile_error("compile_ir_to_object: invalid LLVM IR: " + msg);
  }

  static const llvm::CodeGenOptLevel levels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less, llvm::CodeGenOptLevel::Default,
      llvm::CodeGenOptLevel::Aggressive};
  std::unique_ptr<llvm::TargetMachine> tm(target.createTargetMachine(
      triple, cpu, all_features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      levels[opt_level]));
  if (!tm) throw compile_error("compile_ir_to_object: no AMDGPU target machine for " + mcpu);
  module->setDataLayout(tm->createDataLayout());

  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw compile_error("compile_ir_to_object: the AMDGPU target cannot emit object files");
  pm.run(*module);
  if (!backend_errors.empty())
    throw compile_error("compile_ir_to_object: the AMDGPU backend reported errors for " + mcpu +
                        ": " + backend_errors);
  return std::vector<uint8_t>(out.begin(), out.end());
}

// -----------------------------------------------------------------------------------
// relocatable -> HSACO with lld
// -----------------------------------------------------------------------------------
std::vector<uint8_t> link_hsaco(const std::vector<uint8_t>& relocatable) {
  ElfInfo info = inspect_elf(relocatable);
  if (!info.is_amdgpu)
    throw compile_error("link_hsaco: input is not an AMDGPU HSA ELF object");

  TempDir dir;
  const std::string in = dir.path() + "/kernel.o";
  const std::string out = dir.path() + "/kernel.hsaco";
  write_file(in, relocatable);

  // --threads=1: the object is tiny, and lld's thread count is a process-wide LLVM
  // setting that we would otherwise change under the rest of the program.
  const char* args[] = {"ld.lld", "-shared", "--no-undefined", "--threads=1",
                        "-o", out.c_str(), in.c_str()};
  std::string out_log, err_log;
  lld::Result result{};
  {
    std::lock_guard<std::mutex> lock(lld_mutex);
    if (lld_unusable)
      throw compile_error("link_hsaco: lld failed fatally earlier in this process and cannot "
                          "be run again");
    llvm::raw_string_ostream out_os(out_log), err_os(err_log);
    result = lld::lldMain(args, out_os, err_os, {{lld::Gnu, &lld::elf::link}});
    if (!result.canRunAgain) lld_unusable = true;
  }
  if (result.retCode != 0)
    throw compile_error("link_hsaco: ld.lld failed (exit " + std::to_string(result.retCode) +
                        "): " + err_log + out_log);
  return read_file(out);
}

// -----------------------------------------------------------------------------------
// Readers
// -----------------------------------------------------------------------------------
ElfInfo inspect_elf(const std::vector<uint8_t>& hsaco) {
  ElfInfo info;
  std::optional<Elf> obj = open_elf(hsaco, nullptr);
  if (!obj) return info;
  const auto& hdr = obj->getELFFile().getHeader();
  info.is_amdgpu = hdr.e_machine == llvm::ELF::EM_AMDGPU &&
                   hdr.e_ident[llvm::ELF::EI_OSABI] == llvm::ELF::ELFOSABI_AMDGPU_HSA;
  if (!info.is_amdgpu) return info;
  info.abi_version = hdr.e_ident[llvm::ELF::EI_ABIVERSION];
  info.code_object_version = info.abi_version + 2;
  info.mach = mach_name(*obj);
  info.target_id = target_id_of(*obj);
  info.has_metadata_note = metadata_blob(*obj).has_value();

  // A HSACO keeps .symtab, but a stripped one has only .dynsym; look in both.
  std::set<std::string> seen;
  auto scan = [&](auto range) {
    for (const llvm::object::ELFSymbolRef& sym : range) {
      auto name = sym.getName();
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (!name->ends_with(".kd") || sym.getELFType() != llvm::ELF::STT_OBJECT) continue;
      std::string kernel = name->drop_back(3).str();
      if (seen.insert(kernel).second) info.kernels.push_back(kernel);
    }
  };
  scan(obj->symbols());
  scan(obj->getDynamicSymbolIterators());
  return info;
}

std::string metadata_yaml(const std::vector<uint8_t>& hsaco) {
  Elf obj = open_elf_or_throw(hsaco, "metadata_yaml");
  std::optional<std::string> blob = metadata_blob(obj);
  if (!blob) throw compile_error("metadata_yaml: code object has no AMDGPU metadata note");
  llvm::msgpack::Document doc;
  if (!doc.readFromBlob(*blob, /*Multi=*/false))
    throw compile_error("metadata_yaml: AMDGPU metadata note is not valid MessagePack");
  std::string text;
  llvm::raw_string_ostream os(text);
  doc.toYAML(os);
  return text;
}

ResourceReport read_report(const std::vector<uint8_t>& hsaco, int workgroup_size,
                           const std::string& kernel) {
  Elf obj = open_elf_or_throw(hsaco, "read_report");
  std::optional<std::string> blob = metadata_blob(obj);
  if (!blob) throw compile_error("read_report: code object has no AMDGPU metadata note");
  // The document points into `blob`, which lives until the end of this function.
  llvm::msgpack::Document doc;
  if (!doc.readFromBlob(*blob, /*Multi=*/false) || !doc.getRoot().isMap())
    throw compile_error("read_report: AMDGPU metadata note is not a MessagePack map");
  auto& root = doc.getRoot().getMap();
  auto kernels_it = root.find("amdhsa.kernels");
  if (kernels_it == root.end() || !kernels_it->second.isArray())
    throw compile_error("read_report: metadata has no amdhsa.kernels list");

  std::vector<std::string> names;
  llvm::msgpack::MapDocNode* found = nullptr;
  for (auto& node : kernels_it->second.getArray()) {
    if (!node.isMap()) continue;
    auto& k = node.getMap();
    std::string name = get_string(k, ".name").value_or("");
    names.push_back(name);
    if (!found && (kernel.empty() || name == kernel)) found = &k;
  }
  if (!found) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw compile_error("read_report: no kernel '" + kernel + "' in the metadata (kernels: " +
                        (list.empty() ? "none" : list) + ")");
  }
  auto& k = *found;
  auto field = [&](llvm::StringRef key, int fallback) {
    return static_cast<int>(get_int(k, key).value_or(fallback));
  };

  ResourceReport r;
  r.kernel = get_string(k, ".name").value_or("");
  r.isa = std::string(kTriple) + "--" + target_id_of(obj);
  r.vgpr = field(".vgpr_count", 0);
  r.agpr = field(".agpr_count", 0);
  r.sgpr = field(".sgpr_count", 0);
  r.spill_vgpr = field(".vgpr_spill_count", 0);
  r.spill_sgpr = field(".sgpr_spill_count", 0);
  r.lds_bytes = field(".group_segment_fixed_size", 0);
  r.scratch_bytes = field(".private_segment_fixed_size", 0);
  r.wavefront_size = field(".wavefront_size", 64);
  r.max_flat_workgroup_size = field(".max_flat_workgroup_size", 1024);
  r.code_object_version = abi_version_of(obj) + 2;
  if (workgroup_size < 1 || workgroup_size > r.max_flat_workgroup_size)
    throw compile_error("read_report: kernel '" + r.kernel + "' accepts workgroups of 1.." +
                        std::to_string(r.max_flat_workgroup_size) + " work-items, asked for " +
                        std::to_string(workgroup_size));
  if (r.wavefront_size <= 0) throw compile_error("read_report: metadata wavefront size is 0");
  r.waves_per_workgroup = (workgroup_size + r.wavefront_size - 1) / r.wavefront_size;
  // Occupancy follows what the hardware reserves, which the descriptor says; the AGPRs
  // are already inside both figures on gfx90a+, hence agpr = 0 here.
  if (const ArchLimits* lim = find_limits(mach_name(obj))) {
    if (auto field = granulated_vgpr_field(obj, r.kernel))
      r.vgpr_allocated = static_cast<int>(*field + 1) * lim->vgpr_granule;
    r.occupancy = occupancy(lim->arch, std::max(r.vgpr, r.vgpr_allocated), 0, r.lds_bytes,
                            r.waves_per_workgroup);
    if (r.sgpr > lim->sgprs_for_max_waves)
      r.occupancy = std::min(r.occupancy, lim->max_waves_per_simd - 1);
  }
  return r;
}

// -----------------------------------------------------------------------------------
// Occupancy (formula in the header; limits in kArchLimits)
// -----------------------------------------------------------------------------------

int occupancy(const std::string& arch, int vgpr, int agpr, int lds_bytes, int waves_per_workgroup) {
  std::string cpu = arch.substr(0, arch.find(':'));
  const ArchLimits* lim = find_limits(cpu);
  if (!lim) throw compile_error("occupancy: no register and LDS limits known for '" + arch + "'");
  if (vgpr < 0 || agpr < 0 || lds_bytes < 0 || waves_per_workgroup < 1)
    throw compile_error("occupancy: negative resources or an empty workgroup");

  auto round_up = [](int x, int m) { return (x + m - 1) / m * m; };
  // gfx90a and later allocate AGPRs after the VGPRs, the VGPR block aligned to 4.
  int total = agpr > 0 ? round_up(vgpr, 4) + agpr : vgpr;
  int alloc = round_up(std::max(total, 1), lim->vgpr_granule);
  int waves_vgpr = alloc > lim->vgprs_per_simd_lane
                       ? 0
                       : std::min(lim->max_waves_per_simd, lim->vgprs_per_simd_lane / alloc);
  // A workgroup is resident whole on one CU: count whole workgroups.
  int wg_per_cu = lim->simds_per_cu * waves_vgpr / waves_per_workgroup;
  if (lds_bytes > 0) wg_per_cu = std::min(wg_per_cu, lim->lds_per_cu / lds_bytes);
  int waves = (wg_per_cu * waves_per_workgroup + lim->simds_per_cu - 1) / lim->simds_per_cu;
  return std::min(waves, lim->max_waves_per_simd);
}

// -----------------------------------------------------------------------------------
// Disassembly
// -----------------------------------------------------------------------------------
std::string disassemble(const std::vector<uint8_t>& hsaco, const std::string& mcpu) {
  const llvm::Target& target = amdgpu_target();
  Elf obj = open_elf_or_throw(hsaco, "disassemble");
  auto [cpu, features] = split_target_id(mcpu.empty() ? target_id_of(obj) : mcpu);
  if (cpu.empty()) throw compile_error("disassemble: no processor given and none in e_flags");
  require_known_processor(cpu, "disassemble");

  llvm::Triple triple(kTriple);
  std::unique_ptr<llvm::MCRegisterInfo> mri(target.createMCRegInfo(triple));
  llvm::MCTargetOptions options;
  std::unique_ptr<llvm::MCAsmInfo> mai(mri ? target.createMCAsmInfo(*mri, triple, options) : nullptr);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target.createMCSubtargetInfo(triple, cpu, features));
  std::unique_ptr<llvm::MCInstrInfo> mii(target.createMCInstrInfo());
  if (!mri || !mai || !sti || !mii)
    throw compile_error("disassemble: cannot create the AMDGPU MC layer for " + cpu);
  llvm::MCContext ctx(triple, mai.get(), mri.get(), sti.get(), nullptr, &options);
  std::unique_ptr<llvm::MCDisassembler> dis(target.createMCDisassembler(*sti, ctx));
  std::unique_ptr<llvm::MCInstPrinter> printer(
      target.createMCInstPrinter(triple, mai->getAssemblerDialect(), *mai, *mii, *mri));
  if (!dis || !printer) throw compile_error("disassemble: no AMDGPU disassembler in this LLVM");

  // Function symbols by section, in address order. A symbol's size bounds its code; the
  // s_nop padding the linker puts between kernels belongs to no symbol and is skipped.
  struct Func {
    uint64_t addr, size;
    std::string name;
  };
  std::map<uint64_t, std::vector<Func>> by_section;  // section index -> functions
  std::set<std::pair<uint64_t, std::string>> seen;
  auto collect = [&](auto range) {
    for (const llvm::object::ELFSymbolRef& sym : range) {
      if (sym.getELFType() != llvm::ELF::STT_FUNC) continue;
      auto name = sym.getName();
      auto addr = sym.getAddress();
      auto sec = sym.getSection();
      if (!name || !addr || !sec || *sec == obj.section_end()) {
        if (!name) llvm::consumeError(name.takeError());
        if (!addr) llvm::consumeError(addr.takeError());
        if (!sec) llvm::consumeError(sec.takeError());
        continue;
      }
      if (!seen.insert({*addr, name->str()}).second) continue;
      by_section[(*sec)->getIndex()].push_back({*addr, sym.getSize(), name->str()});
    }
  };
  collect(obj.symbols());
  collect(obj.getDynamicSymbolIterators());

  std::string text;
  llvm::raw_string_ostream os(text);
  bool first_function = true;
  for (const llvm::object::SectionRef& section : obj.sections()) {
    if (!section.isText()) continue;
    auto contents = section.getContents();
    if (!contents) {
      llvm::consumeError(contents.takeError());
      continue;
    }
    auto bytes = llvm::arrayRefFromStringRef(*contents);
    uint64_t base = section.getAddress();
    auto it = by_section.find(section.getIndex());
    if (it == by_section.end()) continue;
    auto& funcs = it->second;
    std::sort(funcs.begin(), funcs.end(),
              [](const Func& a, const Func& b) { return a.addr < b.addr; });
    for (size_t i = 0; i < funcs.size(); ++i) {
      const Func& f = funcs[i];
      uint64_t end = f.size ? f.addr + f.size
                            : (i + 1 < funcs.size() ? funcs[i + 1].addr : base + bytes.size());
      end = std::min<uint64_t>(end, base + bytes.size());
      if (f.addr < base) continue;
      if (!first_function) os << "\n";
      first_function = false;
      os << llvm::format_hex_no_prefix(f.addr, 16) << " <" << f.name << ">:\n";
      for (uint64_t pc = f.addr; pc < end;) {
        llvm::MCInst inst;
        uint64_t size = 0;
        auto window = bytes.slice(pc - base, end - pc);
        std::string comments;
        llvm::raw_string_ostream cs(comments);
        auto status = dis->getInstruction(inst, size, window, pc, cs);
        std::string line;
        llvm::raw_string_ostream ls(line);
        if (status == llvm::MCDisassembler::Success && size > 0) {
          printer->printInst(&inst, pc, "", *sti, ls);
        } else {
          size = std::min<uint64_t>(4, end - pc);
          uint32_t word = 0;
          std::memcpy(&word, window.data(), size);
          ls << ".long " << llvm::format_hex(word, 10);
        }
        // MCInstPrinter indents with a tab; normalize to exactly one.
        llvm::StringRef trimmed = llvm::StringRef(line).ltrim();
        os << '\t' << trimmed;
        for (size_t pad = trimmed.size(); pad < 56; ++pad) os << ' ';
        os << " // " << llvm::format_hex_no_prefix(pc, 12, /*Upper=*/true) << ":";
        for (uint64_t w = 0; w + 4 <= size; w += 4) {
          uint32_t word;
          std::memcpy(&word, window.data() + w, 4);
          os << ' ' << llvm::format_hex_no_prefix(word, 8, /*Upper=*/true);
        }
        os << '\n';
        pc += size;
      }
    }
  }
  return text;
}

}  // namespace tl::amd
