//===- MidwayInstrument.cpp - Mark writes to Midway shared memory dirty ---===//
//
// Part of Midway, a distributed shared memory for C.
//
//===----------------------------------------------------------------------===//
//
// Midway detects writes in software (Bershad et al. 1993, section 4.1): after
// every store that may hit shared data, compiled code marks the stored bytes
// dirty, and the runtime ships exactly the dirty bytes at the next
// synchronization. This pass emits those marks. The mapping from data to marks
// is the contract in midway.h: every byte p of the window [MW_WINDOW_BASE,
// +MW_WINDOW_SIZE) has one dirty bit, bit p & 7 of the shadow byte at
// (p >> 3) + MW_SHADOW_OFFSET. A mark covering whole shadow bytes stores 0xFF to
// them; one covering part of a shadow byte ORs its bits in.
//
// First it settles which global variables are shared (SharedGlobals.cpp:
// MW_SHARED, #pragma clang section, -midway-shared-globals) and puts them in
// the window's sections. Then it works on one function at a time, in three
// steps:
//   * collect: every instruction that may write memory (stores, atomics, memory
//     intrinsics, masked stores and scatters) and every call; in a check build,
//     the loads too;
//   * choose:  classify each accessed pointer by its underlying objects (private
//     memory needs no mark, shared globals need no window check), replace
//     the marks of stores that cover a contiguous range in a loop by one mark
//     after the loop (and those of a block written column by column by one
//     call for its rows, after the nest), pick the C library calls whose
//     writes it can compute, warn about calls and inline asm that may write
//     memory it cannot mark, and, with -midway-polls, choose the loops that
//     poll (Polls.cpp);
//   * instrument: emit the marks, right after each write, call or loop; in a
//     check build the checks, before each access (Checks.cpp); the polls last.
//
// It runs at the end of the optimization pipeline (after vectorization and the
// passes that delete, merge and widen stores), at every optimization level.
//
// A mark never covers a byte that was not written: barrier coalescing merges
// the marked bytes of all ranks, so a spurious mark would clobber another
// rank's write.
//
//===----------------------------------------------------------------------===//

#include "MidwayInstrument.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/MemoryBuiltins.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/BuildLibCalls.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

#include <optional>

using namespace llvm;
using namespace midway;

#define DEBUG_TYPE "midway-instrument"

//===----------------------------------------------------------------------===//
// Knobs
//===----------------------------------------------------------------------===//

cl::OptionCategory midway::MidwayCategory("Midway options",
                                          "Options of the midway-instrument pass");

static cl::opt<bool>
    ClInstrument("midway-instrument",
                 cl::desc("Mark writes to Midway shared memory dirty (the "
                          "master switch of the pass)"),
                 cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClInstrumentAtomics(
    "midway-instrument-atomics",
    cl::desc("Mark atomic stores, atomicrmw, cmpxchg and libatomic calls"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClInstrumentMemIntrinsics(
    "midway-instrument-memintrinsics",
    cl::desc("Mark the destination of memset, memcpy and memmove intrinsics"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClInstrumentLibCalls(
    "midway-instrument-lib-calls",
    cl::desc("Mark the ranges written by C library functions the pass knows "
             "(memcpy, strcpy, read, fread, fgets, sprintf, ...), and have the "
             "runtime bring in the shared buffers of those that pass them to "
             "the kernel (read, write, fread, fwrite, ...); when off, their "
             "writes are reported like those of any other library call"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClOmitPrivate(
    "midway-omit-private",
    cl::desc("Leave writes to provably private memory (stack, non-shared "
             "globals, constants, the C library's heap) unmarked"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClLoopRanges(
    "midway-loop-ranges",
    cl::desc("Mark the contiguous range a loop writes once, after the loop, "
             "instead of after every store"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClStridedRanges(
    "midway-strided-ranges",
    cl::desc("Mark the rows a loop nest writes column by column (a transpose: "
             "the inner loop strides, the outer one steps by the stores' "
             "width) with one call after the outer loop, instead of after "
             "every store"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClNestRanges(
    "midway-nest-ranges",
    cl::desc("Plan the ranges of loop nests before the vectorizer runs, while "
             "each loop of the source is still one loop, and mark them after "
             "the nest; the stores they cover get no marks of their own"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<unsigned> ClInlineRangeBytes(
    "midway-inline-range-bytes",
    cl::desc("Mark a loop's range of run-time length inline, with a word-wide "
             "OR per 64 bytes (stores of all ones for whole shadow bytes), "
             "when it ends within this many bytes of the "
             "start of its first shadow byte (rounded down to a multiple of 64, "
             "at most 512); longer ranges call the runtime. 0: always call the "
             "runtime"),
    cl::init(256), cl::cat(MidwayCategory));

static cl::opt<bool> ClMergeAdjacent(
    "midway-merge-adjacent",
    cl::desc("Mark stores that fill a contiguous range in one basic block once, "
             "after the last of them, instead of one by one"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClConditionalMarks(
    "midway-conditional-marks",
    cl::desc("Store a mark of a known size up to 128 bytes (a store's, a "
             "group's, a short loop's range) only if its bits are not all set "
             "already: a load and a branch, but no write (and no "
             "read-for-ownership of the shadow's cache line) when data is "
             "written again before the runtime collects its marks. Longer "
             "marks and those of run-time length are always stored. The "
             "runtime fences the application thread where another thread "
             "takes marks"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClWarnUnmarked(
    "midway-warn-unmarked",
    cl::desc("Warn about library calls, intrinsics and inline asm that may "
             "write shared memory without a mark"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<bool> ClWarnUnknownCalls(
    "midway-warn-unknown-calls",
    cl::desc("Also warn about calls to external functions that are not C "
             "library functions (by default they are assumed to be compiled "
             "with Midway, which marks their stores)"),
    cl::init(false), cl::cat(MidwayCategory));

//===----------------------------------------------------------------------===//
// Statistics
//
// Always enabled: a release libLLVM (Debian's) compiles STATISTIC to nothing,
// and these counters are how `opt -stats` tells what the pass did to a program.
//===----------------------------------------------------------------------===//

ALWAYS_ENABLED_STATISTIC(NumInstrumentedWrites,
                         "Number of writes instrumented with their own mark");
ALWAYS_ENABLED_STATISTIC(NumDirectShared,
                         "Number of marks made unconditionally (MW_SHARED)");
ALWAYS_ENABLED_STATISTIC(NumRangeChecked,
                         "Number of marks guarded by a window check");
ALWAYS_ENABLED_STATISTIC(NumOmittedPrivate,
                         "Number of writes omitted: memory is private");
ALWAYS_ENABLED_STATISTIC(NumCoalescedInLoop,
                         "Number of writes marked by a loop range instead");
ALWAYS_ENABLED_STATISTIC(NumLoopRanges, "Number of loop ranges marked");
ALWAYS_ENABLED_STATISTIC(NumNestRanges,
                         "Number of loop nest ranges marked before vectorization");
ALWAYS_ENABLED_STATISTIC(NumStridedRanges,
                         "Number of loop ranges marked as rows a stride apart");
ALWAYS_ENABLED_STATISTIC(NumMergedInBlock,
                         "Number of stores marked by a merged mark in their block");
ALWAYS_ENABLED_STATISTIC(NumLibCallsMarked,
                         "Number of library calls whose writes are marked");
ALWAYS_ENABLED_STATISTIC(NumSyscallBuffers,
                         "Number of library calls whose buffer is brought in "
                         "before the kernel sees it");
ALWAYS_ENABLED_STATISTIC(NumWarnings,
                         "Number of writes reported as not marked");

//===----------------------------------------------------------------------===//
// The shadow mapping (midway.h)
//===----------------------------------------------------------------------===//

static constexpr uint64_t WindowBase = MW_WINDOW_BASE;
static constexpr uint64_t WindowSize = MW_WINDOW_SIZE;
static constexpr uint64_t ShadowOffset = MW_SHADOW_OFFSET;
// Data bytes per shadow byte (one dirty bit each).
static constexpr uint64_t BytesPerShadowByte = 8;
// The widest read-modify-write a mark uses; wider partial marks call the runtime.
static constexpr unsigned MaxMarkBits = 128;
// The bits of a masked store's pattern marked by one OR (see
// instrumentMaskedStore).
static constexpr unsigned MaskedChunkBits = 32;

namespace {

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

/// A Midway warning: a write the pass cannot mark. Its kind is a plugin kind,
/// so clang reports it as "warning: ... [-Wbackend-plugin]". Clang cannot place
/// a plugin diagnostic in the source, so the location is part of the message.
class DiagnosticInfoMidway : public DiagnosticInfo {
  const Twine &Msg;

public:
  explicit DiagnosticInfoMidway(const Twine &Msg)
      : DiagnosticInfo(kind(), DS_Warning), Msg(Msg) {}

  void print(DiagnosticPrinter &DP) const override { DP << Msg; }

  static int kind() {
    static const int Kind = getNextAvailablePluginDiagnosticKind();
    return Kind;
  }
};

/// What a warning tells the user: why the write is not marked, and what to do.
constexpr StringLiteral CannotMark =
    ", which Midway cannot mark dirty; pass it private memory and copy the "
    "result";
/// A C library function as the source calls it: glibc's headers redirect scanf and
/// its kin to __isoc99_ (or __isoc23_) names, which no user wrote.
static StringRef sourceName(StringRef Name) {
  if (!Name.consume_front("__isoc99_"))
    Name.consume_front("__isoc23_");
  return Name;
}

constexpr StringLiteral AsmCannotMark =
    ", which Midway cannot mark dirty; keep its stores to private memory, or call "
    "mw_written on what it writes";
constexpr StringLiteral AssumedCompiled =
    "; it is marked dirty only if the callee is compiled with Midway (mwcc)";

/// Reports that the write of instruction I is not marked.
void warnUnmarked(const Instruction &I, const Twine &What) {
  warn(I, What);
  ++NumWarnings;
}

} // namespace

void midway::warn(const Instruction &I, const Twine &What) {
  std::string Where;
  if (const DebugLoc &Loc = I.getDebugLoc())
    Where = (Loc->getFilename() + ":" + Twine(Loc.getLine()) + ":" +
             Twine(Loc.getCol()) + ": midway: ")
                .str();
  else
    Where =
        "midway: in function '" + demangle(I.getFunction()->getName()) + "': ";
  I.getContext().diagnose(DiagnosticInfoMidway(Where + What));
}

void midway::warn(const GlobalValue &GV, const Twine &What) {
  GV.getContext().diagnose(
      DiagnosticInfoMidway("midway: " + GV.getParent()->getSourceFileName() +
                           ": " + What));
}

namespace {

//===----------------------------------------------------------------------===//
// Omission rules
//
// A pointer's underlying objects (getUnderlyingObjects) decide what its write
// needs: all of them private -> no mark; all of them MW_SHARED globals -> a
// mark without a window check; anything else -> a window check, then the mark.
//===----------------------------------------------------------------------===//

/// (a) Stack memory. The runtime reserves the window at a fixed address and the
/// kernel never places a thread stack inside a reservation, so an alloca is
/// never in the window, whether or not its address escapes. (Unlike
/// ThreadSanitizer the question is "is it in the window", not "can another
/// thread see it".)
bool isStackObject(const Value *Obj) { return isa<AllocaInst>(Obj); }

/// (b) Globals outside the shared sections. mwcc links only those into the
/// window, so a global variable defined here elsewhere, or any function (code),
/// is never shared. A declaration or an interposable definition may be replaced
/// by an MW_SHARED definition in another file, so it is not private.
bool isNonSharedGlobal(const Value *Obj) {
  if (isa<Function>(Obj))
    return true;
  const auto *GV = dyn_cast<GlobalVariable>(Obj);
  return GV && !isInSharedSection(*GV) && !GV->isDeclaration() &&
         !GV->isInterposable();
}

/// (c) Constant data: a store to a constant global is undefined behaviour, so
/// there is no write to mark.
bool isConstantData(const Value *Obj) {
  const auto *GV = dyn_cast<GlobalVariable>(Obj);
  return GV && GV->isConstant();
}

// (d), the C library's heap, needs the function's TargetLibraryInfo: see
// FunctionInstrumenter::isLibcHeapObject.

/// (e) No object: null (in the flat address space), undef or poison. Writing
/// through them is undefined, and a library function given a null pointer
/// (time(NULL), strtol(s, NULL, 10)) does not write through it.
bool isNoObject(const Value *Obj) {
  if (isa<ConstantPointerNull>(Obj) || isa<UndefValue>(Obj))
    return true;
  // Code is not data: a function pointer (a signal handler, a callback) names
  // nothing a callee could store into.
  if (isa<Function>(Obj))
    return true;
  // A constant address that is no object: SIG_IGN ((void (*)(int))1), SIG_ERR (-1).
  if (const auto *CE = dyn_cast<ConstantExpr>(Obj);
      CE && CE->getOpcode() == Instruction::IntToPtr)
    if (const auto *CI = dyn_cast<ConstantInt>(CE->getOperand(0)))
      return CI->getValue().ult(4096) || CI->getValue().isAllOnes();
  return false;
}

/// A shared global (MW_SHARED, #pragma clang section, -midway-shared-globals):
/// linked into the window, so a write to it is marked without a window check.
/// A declaration is trusted like a definition (C merges the attribute of an
/// earlier declaration into the definition).
bool isSharedGlobal(const Value *Obj) {
  const auto *GV = dyn_cast<GlobalVariable>(Obj);
  return GV && isInSharedSection(*GV);
}

//===----------------------------------------------------------------------===//
// What calls write
//===----------------------------------------------------------------------===//

/// Functions of the Midway runtime. They are compiled without the pass and mark
/// what they write themselves: the API's (mw_*, called here, defined in the
/// library) and the runtime's own (__mw_*, a name C reserves). A function this
/// unit defines is the program's whatever its name: a helper a user calls
/// mw_fill_row writes shared data as any other does (audit 32).
bool isRuntimeFunction(const Function &F) {
  return F.getName().starts_with("__mw_") || (F.isDeclaration() && F.getName().starts_with("mw_"));
}

/// The argument through which a C library function the pass models writes the
/// range it marks after the call (see instrumentLibCall).
std::optional<unsigned> getMarkedArgument(LibFunc Func) {
  switch (Func) {
  case LibFunc_memcpy:
  case LibFunc_memcpy_chk:
  case LibFunc_memmove:
  case LibFunc_memmove_chk:
  case LibFunc_memset:
  case LibFunc_memset_chk:
  case LibFunc_mempcpy:
  case LibFunc_mempcpy_chk:
  case LibFunc_memccpy:
  case LibFunc_memccpy_chk:
  case LibFunc_bzero:
  case LibFunc_strcpy:
  case LibFunc_strcpy_chk:
  case LibFunc_stpcpy:
  case LibFunc_stpcpy_chk:
  case LibFunc_strncpy:
  case LibFunc_strncpy_chk:
  case LibFunc_stpncpy:
  case LibFunc_stpncpy_chk:
  case LibFunc_strcat:
  case LibFunc_strcat_chk:
  case LibFunc_strncat:
  case LibFunc_strncat_chk:
  case LibFunc_strlcpy:
  case LibFunc_strlcpy_chk:
  case LibFunc_fread:
  case LibFunc_fread_unlocked:
  case LibFunc_fgets:
  case LibFunc_fgets_unlocked:
  case LibFunc_sprintf:
  case LibFunc_sprintf_chk:
  case LibFunc_siprintf:
  case LibFunc_small_sprintf:
  case LibFunc_vsprintf:
  case LibFunc_vsprintf_chk:
  case LibFunc_snprintf:
  case LibFunc_snprintf_chk:
  case LibFunc_vsnprintf:
  case LibFunc_vsnprintf_chk:
  case LibFunc_posix_memalign:
    return 0;
  case LibFunc_bcopy:
  case LibFunc_read:
  case LibFunc_pread:
  case LibFunc_readlink:
  case LibFunc_realpath:
    return 1;
  default:
    return std::nullopt;
  }
}

/// A C library function that hands a buffer to the kernel: the argument, whether
/// the kernel writes it, and its length, the next argument (times the one after it
/// for fread and fwrite, a size and a count). The kernel meets a shared page this
/// rank holds no copy of with EFAULT, not with a fault the runtime could serve, so
/// the runtime brings the buffer's pages in first (__mw_before_syscall). Functions
/// that copy through user space first (fgets, fputs, printf) fault as any code does.
struct SyscallBuffer {
  unsigned Arg;
  bool KernelWrites;
  bool Items;
};
std::optional<SyscallBuffer> getSyscallBuffer(LibFunc Func) {
  switch (Func) {
  case LibFunc_read:
  case LibFunc_pread:
  case LibFunc_readlink:
    return SyscallBuffer{1, true, false};
  case LibFunc_write:
  case LibFunc_pwrite:
    return SyscallBuffer{1, false, false};
  case LibFunc_fread:
  case LibFunc_fread_unlocked:
    return SyscallBuffer{0, true, true};
  case LibFunc_fwrite:
  case LibFunc_fwrite_unlocked:
    return SyscallBuffer{0, false, true};
  default:
    return std::nullopt;
  }
}

/// An argument that is the C library's own object rather than the caller's
/// data: a FILE or DIR (libc creates them with fopen, opendir or as stdin, in
/// its own heap or data, never in the window), or a va_list (which lives on the
/// stack of the variadic function that started it; the pointers passed through
/// it to vscanf or to %n are not visible to the pass).
bool isLibcObjectArgument(LibFunc Func, unsigned ArgNo) {
  switch (Func) {
  case LibFunc_vprintf:
  case LibFunc_vscanf:
    return ArgNo == 1;
  case LibFunc_vfprintf:
  case LibFunc_vfscanf:
    return ArgNo == 0 || ArgNo == 2;
  case LibFunc_vsprintf:
  case LibFunc_vsscanf:
    return ArgNo == 2;
  case LibFunc_vsnprintf:
    return ArgNo == 3;
  case LibFunc_vsprintf_chk:
    return ArgNo == 4;
  case LibFunc_vsnprintf_chk:
    return ArgNo == 5;
  case LibFunc_under_IO_getc:
  case LibFunc_clearerr:
  case LibFunc_closedir:
  case LibFunc_fclose:
  case LibFunc_feof:
  case LibFunc_ferror:
  case LibFunc_fflush:
  case LibFunc_fgetc:
  case LibFunc_fgetc_unlocked:
  case LibFunc_fgetpos:
  case LibFunc_fileno:
  case LibFunc_fiprintf:
  case LibFunc_flockfile:
  case LibFunc_fprintf:
  case LibFunc_fscanf:
  case LibFunc_fseek:
  case LibFunc_fseeko:
  case LibFunc_fseeko64:
  case LibFunc_fsetpos:
  case LibFunc_ftell:
  case LibFunc_ftello:
  case LibFunc_ftello64:
  case LibFunc_ftrylockfile:
  case LibFunc_funlockfile:
  case LibFunc_getc:
  case LibFunc_getc_unlocked:
  case LibFunc_pclose:
  case LibFunc_rewind:
  case LibFunc_setbuf:
  case LibFunc_setvbuf:
  case LibFunc_small_fprintf:
    return ArgNo == 0;
  case LibFunc_under_IO_putc:
  case LibFunc_fputc:
  case LibFunc_fputc_unlocked:
  case LibFunc_fputs:
  case LibFunc_fputs_unlocked:
  case LibFunc_putc:
  case LibFunc_putc_unlocked:
  case LibFunc_ungetc:
    return ArgNo == 1;
  case LibFunc_fgets:
  case LibFunc_fgets_unlocked:
    return ArgNo == 2;
  case LibFunc_fread:
  case LibFunc_fread_unlocked:
  case LibFunc_fwrite:
  case LibFunc_fwrite_unlocked:
    return ArgNo == 3;
  default:
    return false;
  }
}

/// Arguments the C library only reads, where LLVM's attribute inference does
/// not say so: fwrite's buffer, qsort's comparison function, and everything
/// passed to the exec family (which replaces the process, or fails without
/// writing).
/// Pointer arguments of C library functions TargetLibraryInfo does not know
/// that the function only reads (C's const is not in the IR).
bool isReadOnlyLibcArgumentByName(StringRef Name, unsigned ArgNo) {
  if (Name == "strftime")  // (buffer, size, format, const struct tm *)
    return ArgNo == 2 || ArgNo == 3;
  return false;
}

bool isReadOnlyLibcArgument(LibFunc Func, unsigned ArgNo) {
  switch (Func) {
  case LibFunc_fwrite:
  case LibFunc_fwrite_unlocked:
    return ArgNo == 0;
  case LibFunc_qsort:
    return ArgNo == 3;
  case LibFunc_execl:
  case LibFunc_execle:
  case LibFunc_execlp:
  case LibFunc_execv:
  case LibFunc_execvP:
  case LibFunc_execve:
  case LibFunc_execvp:
  case LibFunc_execvpe:
    return true;
  default:
    return false;
  }
}

/// The format argument of a printf-family function with variadic arguments.
std::optional<unsigned> getPrintfFormatArgument(LibFunc Func) {
  switch (Func) {
  case LibFunc_printf:
  case LibFunc_iprintf:
  case LibFunc_small_printf:
    return 0;
  case LibFunc_fprintf:
  case LibFunc_fiprintf:
  case LibFunc_small_fprintf:
  case LibFunc_sprintf:
  case LibFunc_siprintf:
  case LibFunc_small_sprintf:
    return 1;
  case LibFunc_snprintf:
    return 2;
  case LibFunc_sprintf_chk:
    return 3;
  case LibFunc_snprintf_chk:
    return 4;
  default:
    return std::nullopt;
  }
}

/// Whether a printf format may write through a variadic argument: only a %n
/// conversion does, and an unknown format may contain one.
bool formatMayWrite(const Value *Format) {
  StringRef Fmt;
  if (!getConstantStringInfo(Format, Fmt))
    return true;
  for (size_t I = Fmt.find('%'); I != StringRef::npos; I = Fmt.find('%', I)) {
    size_t Conv = Fmt.find_first_not_of("0123456789$#-+ '.*hlLqjzt", I + 1);
    if (Conv == StringRef::npos)
      return false;
    if (Fmt[Conv] == 'n')
      return true;
    I = Conv + 1;
  }
  return false;
}

/// The format argument of a scanf-family function (by name: glibc's C99 and C23
/// entry points, __isoc99_fscanf and __isoc23_fscanf, are not in TLI), whose
/// writes through its variadic arguments the pass marks when the format is a
/// constant (see parseScanfFormat).
std::optional<unsigned> getScanfFormatArgument(StringRef Name) {
  Name = sourceName(Name);
  if (Name == "scanf")
    return 0;
  if (Name == "fscanf" || Name == "sscanf")
    return 1;
  return std::nullopt;
}

/// What one assigning conversion of a scanf format writes through its argument:
/// Size bytes, or the string stored there and its NUL (Size 0: %s and %[).
struct ScanfWrite {
  unsigned Index; // among the assigning conversions, which the result counts
  uint64_t Size;
};

/// The writes of a constant scanf format, one per assigning conversion in
/// order, or nothing if the pass cannot tell them apart: a format that is not
/// a constant, positional arguments (%1$d), %n (which stores without counting
/// in the result, so whether it ran is unknown), wide strings (%ls, %l[), long
/// double (%Lf, whose size is the target's). Long and pointer are PtrSize.
std::optional<SmallVector<ScanfWrite, 8>>
parseScanfFormat(const Value *Format, uint64_t PtrSize) {
  StringRef Fmt;
  if (!getConstantStringInfo(Format, Fmt))
    return std::nullopt;
  SmallVector<ScanfWrite, 8> Writes;
  for (size_t I = Fmt.find('%'); I != StringRef::npos; I = Fmt.find('%', I)) {
    ++I;
    if (I < Fmt.size() && Fmt[I] == '%') {
      ++I;
      continue;
    }
    bool Suppressed = I < Fmt.size() && Fmt[I] == '*';
    if (Suppressed)
      ++I;
    size_t Digits = I;
    uint64_t Width = 0;
    while (I < Fmt.size() && isDigit(Fmt[I]))
      Width = Width * 10 + (Fmt[I++] - '0');
    if (I < Fmt.size() && Fmt[I] == '$')
      return std::nullopt;
    bool HasWidth = I != Digits;
    bool Allocates = I < Fmt.size() && Fmt[I] == 'm'; // POSIX %ms: a char **
    if (Allocates)
      ++I;
    size_t Mod = I;
    while (I < Fmt.size() && StringRef("hlLqjzt").contains(Fmt[I]))
      ++I;
    if (I == Fmt.size())
      return std::nullopt;
    StringRef Length = Fmt.slice(Mod, I);
    char Conv = Fmt[I++];
    if (Conv == '[') { // the scanset runs to a ']' that is not its first member
      if (I < Fmt.size() && Fmt[I] == '^')
        ++I;
      if (I < Fmt.size() && Fmt[I] == ']')
        ++I;
      I = Fmt.find(']', I);
      if (I == StringRef::npos)
        return std::nullopt;
      ++I;
    }
    if (Suppressed)
      continue;
    uint64_t Size;
    switch (Conv) {
    case 'd': case 'i': case 'o': case 'u': case 'x': case 'X':
      Size = StringSwitch<uint64_t>(Length)
                 .Case("", 4).Case("hh", 1).Case("h", 2)
                 .Cases("l", "z", "t", PtrSize)
                 .Cases("ll", "q", "j", 8)
                 .Default(0);
      break;
    case 'a': case 'A': case 'e': case 'E': case 'f': case 'F': case 'g': case 'G':
      Size = StringSwitch<uint64_t>(Length)
                 .Case("", 4).Case("l", 8).Default(0);
      break;
    case 'p':
      Size = PtrSize;
      break;
    case 'c':
      if (!Length.empty())
        return std::nullopt;
      Size = HasWidth ? Width : 1;
      break;
    case 's': case '[':
      if (!Length.empty())
        return std::nullopt;
      Size = 0;
      break;
    default: // %n, and conversions C does not have
      return std::nullopt;
    }
    if (Size == 0 && Conv != 's' && Conv != '[')
      return std::nullopt;
    if (Allocates)
      Size = PtrSize;
    Writes.push_back({static_cast<unsigned>(Writes.size()), Size});
  }
  return Writes;
}

/// Intrinsics that take a pointer and may "write" in LLVM's model without
/// storing data there: lifetime and invariant markers, and stackrestore.
bool isMarkerIntrinsic(Intrinsic::ID ID) {
  switch (ID) {
  case Intrinsic::lifetime_start:
  case Intrinsic::lifetime_end:
  case Intrinsic::invariant_start:
  case Intrinsic::invariant_end:
  case Intrinsic::stackrestore:
    return true;
  default:
    return false;
  }
}

/// libatomic, which clang calls for atomics wider than the target's lock-free
/// width: the generic __atomic_store(size, ptr, ...), __atomic_exchange and
/// __atomic_compare_exchange, sized ones such as __atomic_fetch_add_16(ptr,
/// ...), and the loads, which write only the caller's temporary.
bool isLibatomicFunction(const Function &F) {
  return F.getName().starts_with("__atomic_");
}

/// What a libatomic entry point writes to the atomic object, if anything.
struct LibatomicWrite {
  unsigned PtrArg;
  std::optional<unsigned> SizeArg; // the size argument of a generic entry
  uint64_t Size;                   // the size of a sized entry
  bool OnlyIfSucceeded;            // compare_exchange writes only on success
};

std::optional<LibatomicWrite> getLibatomicWrite(const Function &F) {
  StringRef Name = F.getName().drop_front(strlen("__atomic_"));
  bool CmpXchg = Name.starts_with("compare_exchange");
  if (Name == "store" || Name == "exchange" || Name == "compare_exchange")
    return LibatomicWrite{/*PtrArg=*/1, /*SizeArg=*/0, /*Size=*/0, CmpXchg};
  auto [Op, Width] = Name.rsplit('_');
  uint64_t Size;
  if (Width.getAsInteger(10, Size) || !isPowerOf2_64(Size) || Size > 16)
    return std::nullopt;
  if (Op == "load")
    return std::nullopt;
  return LibatomicWrite{/*PtrArg=*/0, /*SizeArg=*/std::nullopt, Size, CmpXchg};
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// A byte range [Offset, Offset + Size) relative to a write's address.
struct ByteRange {
  uint64_t Offset;
  uint64_t Size;
};

/// The bytes a store of type Ty writes: the store size of a scalar or vector,
/// and only the fields of a first-class aggregate (the backend does not store
/// padding).
void collectWrittenBytes(Type *Ty, uint64_t Offset, const DataLayout &DL,
                         SmallVectorImpl<ByteRange> &Bytes) {
  if (auto *STy = dyn_cast<StructType>(Ty)) {
    const StructLayout *SL = DL.getStructLayout(STy);
    for (unsigned I = 0, E = STy->getNumElements(); I != E; ++I)
      collectWrittenBytes(STy->getElementType(I),
                          Offset + SL->getElementOffset(I), DL, Bytes);
    return;
  }
  if (auto *ATy = dyn_cast<ArrayType>(Ty)) {
    Type *EltTy = ATy->getElementType();
    uint64_t Stride = DL.getTypeAllocSize(EltTy);
    if (!EltTy->isAggregateType() && DL.getTypeStoreSize(EltTy) == Stride) {
      Bytes.push_back({Offset, Stride * ATy->getNumElements()});
      return;
    }
    for (uint64_t I = 0, E = ATy->getNumElements(); I != E; ++I)
      collectWrittenBytes(EltTy, Offset + I * Stride, DL, Bytes);
    return;
  }
  uint64_t Size = DL.getTypeStoreSize(Ty).getFixedValue();
  if (!Bytes.empty() && Bytes.back().Offset + Bytes.back().Size == Offset)
    Bytes.back().Size += Size;
  else
    Bytes.push_back({Offset, Size});
}

/// Module-wide state: types, the runtime's entry point, and what LLVM knows
/// about the C library.
class ModuleInstrumenter {
public:
  void emitRecord(StringRef Section, StringRef Text) {
    if (Text.empty())
      return;
    Constant *Data = ConstantDataArray::getString(Ctx, Text, /*AddNull=*/false);
    auto *GV = new GlobalVariable(M, Data->getType(), /*isConstant=*/true,
                                  GlobalValue::PrivateLinkage, Data,
                                  "midway." + Section);
    GV->setSection(Section);
    GV->setAlignment(Align(1));
    appendToCompilerUsed(M, {GV});
  }

  std::string CallRecords;

public:
  explicit ModuleInstrumenter(Module &M)
      : M(M), DL(M.getDataLayout()), Ctx(M.getContext()),
        IntptrTy(DL.getIntPtrType(Ctx)), PtrTy(PointerType::getUnqual(Ctx)),
        LibcImpl(Triple(M.getTargetTriple())), Libc(LibcImpl) {}

  /// The C library function Callee is, by name and prototype. Unlike the
  /// pipeline's TargetLibraryInfo this ignores -fno-builtin: whatever the
  /// optimizer may assume, the C library is not compiled with Midway.
  std::optional<LibFunc> getLibcFunction(const Function &Callee) const {
    LibFunc Func;
    if (Libc.getLibFunc(Callee, Func))
      return Func;
    return std::nullopt;
  }

  /// What LLVM knows about C library function F (memory effects, read-only
  /// arguments), inferred on a scratch declaration so that neither the module
  /// nor its -fno-builtin choice is touched. At -O0 no pass has inferred it
  /// yet.
  AttributeList getLibcAttributes(Function &F) {
    auto [It, Inserted] = LibcAttributes.try_emplace(&F);
    if (Inserted) {
      if (!Scratch) {
        Scratch = std::make_unique<Module>("midway.libc", Ctx);
        Scratch->setDataLayout(DL);
        Scratch->setTargetTriple(M.getTargetTriple());
      }
      Function *Decl =
          Function::Create(F.getFunctionType(), GlobalValue::ExternalLinkage,
                           F.getName(), *Scratch);
      inferNonMandatoryLibFuncAttrs(*Decl, Libc);
      It->second = Decl->getAttributes();
    }
    return It->second;
  }

  /// A call to a function not defined in this module and not a C library
  /// function, through which it may write shared memory. The pass assumes the
  /// callee is compiled with Midway; the runtime checks that at start-up
  /// against the functions every mwcc-compiled object defines (MW_CALLS_SECTION,
  /// MW_DEFINED_SECTION in midway.h) and warns about the rest.
  void recordUnverifiedCall(const Function &Callee, const Instruction &Call,
                            unsigned ArgNo) {
    std::string Where = "in function '" + demangle(Call.getFunction()->getName()) + "'";
    if (const DebugLoc &Loc = Call.getDebugLoc())
      Where = (Loc->getFilename() + ":" + Twine(Loc.getLine()) + ":" +
               Twine(Loc.getCol()))
                  .str();
    CallRecords += (Callee.getName() + "\t" + Twine(ArgNo + 1) + "\t" + Where + "\n").str();
  }

  /// Emits this module's records for the runtime's start-up check: the calls
  /// recorded above, and the external functions defined (and so instrumented)
  /// here. Each is a string of newline-terminated lines in its own section;
  /// the linker concatenates the sections of all objects.
  void emitLinkRecords() {
    std::string Defined;
    for (const Function &F : M)
      if (!F.isDeclaration() && !F.hasLocalLinkage())
        Defined += (F.getName() + "\n").str();
    emitRecord(MW_DEFINED_SECTION, Defined);
    emitRecord(MW_CALLS_SECTION, CallRecords);
  }

  FunctionCallee getMarkRangeFn() {
    AttributeList Attrs =
        AttributeList().addFnAttribute(Ctx, Attribute::NoUnwind);
    return M.getOrInsertFunction("__mw_mark_range", Attrs, Type::getVoidTy(Ctx),
                                 PtrTy, IntptrTy);
  }

  FunctionCallee getBeforeSyscallFn() {
    AttributeList Attrs =
        AttributeList().addFnAttribute(Ctx, Attribute::NoUnwind);
    return M.getOrInsertFunction("__mw_before_syscall", Attrs,
                                 Type::getVoidTy(Ctx), PtrTy, IntptrTy,
                                 Type::getInt32Ty(Ctx));
  }

  FunctionCallee getMarkRowsFn() {
    AttributeList Attrs =
        AttributeList().addFnAttribute(Ctx, Attribute::NoUnwind);
    return M.getOrInsertFunction("__mw_mark_rows", Attrs, Type::getVoidTy(Ctx),
                                 PtrTy, IntptrTy, IntptrTy, IntptrTy);
  }

  /// The tag of the stores whose bytes a mark placed before the vectorizer
  /// covers (a loop nest's range): an alias scope of Midway's own domain, in
  /// their !noalias lists. A !noalias list is a claim about aliasing, so every
  /// transformation that merges, widens or clones stores keeps only what all of
  /// its stores claim (the vectorizers intersect the lists of the stores they
  /// widen, instcombine and simplifycfg those they merge) or drops it. No
  /// access is in this scope, so the claim tells alias analysis nothing
  /// (ScopedNoAliasAA proves nothing in a domain where the other access has no
  /// scope). A store that loses the tag is marked again, which costs but is
  /// never wrong. Null if there is none and Create is false.
  MDNode *getCoveredTag(bool Create) {
    NamedMDNode *Named = Create ? M.getOrInsertNamedMetadata("midway.covered")
                                : M.getNamedMetadata("midway.covered");
    if (!Named)
      return nullptr;
    if (!Named->getNumOperands()) {
      MDBuilder MDB(Ctx);
      Named->addOperand(MDB.createAnonymousAliasScope(
          MDB.createAnonymousAliasScopeDomain("midway"),
          "covered by a loop nest's mark"));
    }
    return Named->getOperand(0);
  }

  void tagCovered(Instruction &I) {
    I.setMetadata(LLVMContext::MD_noalias,
                  MDNode::concatenate(
                      I.getMetadata(LLVMContext::MD_noalias),
                      MDNode::get(Ctx, {getCoveredTag(/*Create=*/true)})));
  }

  bool isCovered(const Instruction &I) {
    MDNode *NoAlias = I.getMetadata(LLVMContext::MD_noalias);
    MDNode *Tag = NoAlias ? getCoveredTag(/*Create=*/false) : nullptr;
    return Tag && is_contained(NoAlias->operands(), Tag);
  }

  FunctionCallee getStrLenFn() {
    return M.getOrInsertFunction("strlen", IntptrTy, PtrTy);
  }

  Module &M;
  const DataLayout &DL;
  LLVMContext &Ctx;
  IntegerType *IntptrTy;
  PointerType *PtrTy;

private:
  TargetLibraryInfoImpl LibcImpl;
  TargetLibraryInfo Libc;
  std::unique_ptr<Module> Scratch;
  DenseMap<Function *, AttributeList> LibcAttributes;
};

/// A write the pass has to account for, and what it decided.
struct Write {
  Instruction *I;
  Region R = Region::Unknown;
  bool Coalesced = false;
};

/// A call whose writes the pass marks after it returns: a C library function it
/// models, or a libatomic entry point.
struct MarkedCall {
  CallBase *CB;
  Region R;
  std::optional<LibFunc> Func;
  std::optional<LibatomicWrite> Atomic;
  /// An indirect call, marked as Func's only if it calls one of these.
  SmallVector<StringRef, 4> IfCallee;
};

/// The C library functions an indirect call of this type may be that the pass
/// marks as `*Func` (same written argument and length): a dispatch table of
/// memcpy and memmove, a copy function chosen at run time. Any other callee is
/// a function mwcc built, or one mw_init checks.
std::optional<LibFunc> getIndirectLibCall(const CallBase &CB, SmallVectorImpl<StringRef> &Names) {
  FunctionType *T = CB.getFunctionType();
  if (!T->getReturnType()->isPointerTy() || T->isVarArg())
    return std::nullopt;
  auto IsPtr = [&](unsigned I) { return T->getParamType(I)->isPointerTy(); };
  auto IsInt = [&](unsigned I) { return T->getParamType(I)->isIntegerTy(); };
  if (T->getNumParams() == 3 && IsPtr(0) && IsPtr(1) && IsInt(2)) {
    Names.append({"memcpy", "memmove", "mempcpy", "strncpy"});
    return LibFunc_memcpy;
  }
  if (T->getNumParams() == 3 && IsPtr(0) && IsInt(1) && IsInt(2)) {
    Names.push_back("memset");
    return LibFunc_memset;
  }
  if (T->getNumParams() == 2 && IsPtr(0) && IsPtr(1)) {
    Names.push_back("strcpy");
    return LibFunc_strcpy;
  }
  return std::nullopt;
}

/// A scanf-family call with a constant format: what each of its arguments from
/// FirstArg on receives, marked after it returns if the result counts it.
struct ScanfCall {
  CallBase *CB;
  unsigned FirstArg;
  SmallVector<ScanfWrite, 8> Writes;
};

/// Conditions that a loop does not change, each with the value it must have:
/// the guards of inner loops that may run zero times.
using Guards = SmallVector<std::pair<Value *, bool>, 2>;

/// A write [Ptr, Ptr + Size) made on every iteration of a loop L, where it is
/// planned (or on none, if its Conditions do not hold), with Ptr =
/// {Start,+,Step}<L> or, for an inner loop's range, Ptr the same for all of L:
/// a store or memory intrinsic in block From, or the range of a whole inner
/// loop, made on the edge From -> To out of it. With Rows, it is Rows such
/// ranges, Stride apart; a Column is one inner loop's run of stores, a piece
/// per row (see strideAcross).
struct LoopWrite {
  const SCEV *Ptr;
  const SCEV *Size;
  Align Alignment;
  Region R;
  BasicBlock *From;
  BasicBlock *To;
  SmallVector<Write *, 4> Writes; // the writes it stands for
  const SCEV *Rows = nullptr;
  const SCEV *Stride = nullptr;
  bool Column = false;
  Guards Conditions = {}; // under which it is made (see guardOf)
};

/// A range marked once on the edge Latch -> Exit out of a loop; with Rows, that
/// many ranges of Len bytes, Stride apart.
struct LoopRange {
  BasicBlock *Latch;
  BasicBlock *Exit;
  const SCEV *Start;
  const SCEV *Len;
  Align Alignment;
  Region R;
  const SCEV *Rows = nullptr;
  const SCEV *Stride = nullptr;
  Guards Conditions;
};

/// The shape that makes a mark after loop L stand for every iteration: L leaves
/// only from its latch, every iteration that starts reaches the latch, and the
/// number of iterations is known on exit.
struct LoopShape {
  BasicBlock *Latch;
  BasicBlock *Exit;
  const SCEV *BackedgeTakenCount;
};

/// A load the check build checks.
struct Load {
  Instruction *I;
  Region R = Region::Unknown;
};

/// When a function is instrumented: its loop nests' ranges before the
/// vectorizer, everything else last.
enum class Stage { Nests, Last };

class FunctionInstrumenter {
public:
  /// Checks is the check build's state, or null in a default build.
  FunctionInstrumenter(ModuleInstrumenter &MI, CheckInstrumenter *Checks,
                       Function &F, FunctionAnalysisManager &FAM,
                       Stage When = Stage::Last)
      : When(When), MI(MI), Checks(Checks), F(F), DL(MI.DL), IntptrTy(MI.IntptrTy),
        PtrTy(MI.PtrTy),
        TLI(FAM.getResult<TargetLibraryAnalysis>(F)),
        DT(FAM.getResult<DominatorTreeAnalysis>(F)),
        LI(FAM.getResult<LoopAnalysis>(F)),
        SE(FAM.getResult<ScalarEvolutionAnalysis>(F)) {}

  /// Instruments F; returns whether it changed.
  bool run() {
    collect();
    chooseWrites();
    if (ClLoopRanges)
      planLoopRanges();
    if (When == Stage::Nests)
      return markNests();
    if (ClMergeAdjacent)
      mergeAdjacentStores();
    chooseCalls();
    chooseLoads();
    // Polls are chosen while LoopInfo describes F, and inserted last.
    SmallVector<PlannedPoll, 4> Polls;
    if (arePollsEnabled())
      Polls = planPolls(LI, SE);
    bool Changed = instrument();
    if (Checks)
      Changed |= instrumentChecks();
    return insertPolls(Polls) || Changed;
  }

private:
  // collect
  void collect();
  bool isWrite(const Instruction &I) const;
  bool isCheckedLoad(const Instruction &I) const;
  static Value *getWritePointer(Instruction *I);

  // choose
  void chooseWrites();
  void planLoopRanges();
  std::optional<LoopWrite> getLoopWrite(Write &W);
  const SCEV *addressOf(Value *Ptr);
  Value *powerOfTwo(Value *Shift);
  DenseMap<Value *, Value *> Powers; // shift amount -> 1 << it (addressOf)
  void joinAdjacentRanges(Loop *L, SmallVectorImpl<LoopWrite> &Writes);
  bool isKnownNoMore(const SCEV *X, const SCEV *Bytes);
  void planLoop(Loop *L, ArrayRef<LoopWrite> Writes,
                DenseMap<Loop *, SmallVector<LoopWrite, 4>> &Pending);
  std::optional<LoopShape> getLoopShape(Loop *L);
  bool executesOnEveryIteration(const LoopWrite &W, const LoopShape &Shape);
  std::optional<std::pair<Value *, bool>> guardOf(const LoopWrite &W, Loop *L,
                                                  const LoopShape &Shape);
  /// W's address as it steps through L; null if it does not move with L.
  static const SCEVAddRecExpr *stepsThrough(const LoopWrite &W, const Loop *L) {
    const auto *Ptr = dyn_cast<SCEVAddRecExpr>(W.Ptr);
    return Ptr && Ptr->getLoop() == L ? Ptr : nullptr;
  }
  std::optional<LoopWrite> rowsOf(const LoopShape &Shape, const LoopWrite &W);
  std::optional<LoopWrite> sameAfter(const LoopShape &Shape, const LoopWrite &W);
  bool isExpandable(const LoopShape &Shape, const LoopWrite &W);
  std::optional<LoopWrite> coalesce(const LoopShape &Shape,
                                    ArrayRef<const LoopWrite *> Group);
  void standFor(LoopWrite &W, ArrayRef<const LoopWrite *> Group);
  /// Writes of a group whose bytes in one iteration are one interval, [Lo,
  /// Hi) from the start of the group's first write.
  struct AdjacentRun {
    SmallVector<size_t, 4> Members;
    int64_t Lo, Hi;
  };
  SmallVector<AdjacentRun, 2> adjacentRuns(ArrayRef<const LoopWrite *> Group,
                                           ArrayRef<size_t> Members);
  std::optional<LoopWrite> strideAcross(Loop *L, const LoopShape &Shape,
                                        ArrayRef<const LoopWrite *> Part,
                                        const SCEV *Base, int64_t Lo,
                                        int64_t Hi);
  void settle(const LoopWrite &W);
  void mergeAdjacentStores();
  void mergeRun(ArrayRef<std::pair<int64_t, Write *>> Run, Value *Base);
  void chooseCalls();
  void chooseLibCall(CallBase &CB, LibFunc Func);
  void checkPointerArguments(CallBase &CB, AttributeList Known,
                             std::optional<unsigned> Skip,
                             std::optional<LibFunc> Func, const Twine &Callee,
                             StringRef Advice);
  bool mayWriteThroughArgument(const CallBase &CB, unsigned ArgNo,
                               AttributeList Known) const;
  void checkInlineAsm(CallBase &CB);
  void chooseLoads();
  Region classifyPointer(const Value *Ptr);
  bool isLibcHeapObject(const Value *Obj);
  bool isPosixMemalignResult(const LoadInst *Load) const;
  bool isPrivateObject(const Value *Obj);
  bool isPrivate(const Value *Ptr) {
    return classifyPointer(Ptr) == Region::Private;
  }

  // instrument
  bool markNests();
  bool instrument();
  void instrumentStore(StoreInst *SI, Region R);
  void instrumentAtomicRMW(AtomicRMWInst *RMW, Region R);
  void instrumentCmpXchg(AtomicCmpXchgInst *CX, Region R);
  void instrumentMemIntrinsic(AnyMemIntrinsic *MI, Region R);
  void instrumentMaskedStore(IntrinsicInst *II, Region R);
  void instrumentMaskedScatter(IntrinsicInst *II, Region R);
  void instrumentLibCall(const MarkedCall &C);
  void instrumentLibatomicCall(const MarkedCall &C);
  bool chooseScanfCall(CallBase &CB, unsigned FormatArg);
  void instrumentScanfCall(const ScanfCall &C);
  bool instrumentChecks();
  void checkWrite(const Write &W);
  void checkLoad(const Load &L);
  void markRange(Instruction *InsertBefore, const DebugLoc &Loc, Value *Addr,
                 Value *Len, Align Alignment, bool CheckWindow,
                 bool InlineShort = false);
  void markRows(Instruction *InsertBefore, const DebugLoc &Loc, Value *Addr,
                Value *Len, Value *Rows, Value *Stride, bool CheckWindow);
  void markBytes(Instruction *InsertBefore, const DebugLoc &Loc, Value *Addr,
                 ArrayRef<ByteRange> Bytes, Align Alignment, bool CheckWindow,
                 Value *Cond = nullptr);
  void markBits(IRBuilder<> &IRB, Value *Addr, uint64_t Size, Align Alignment);
  void orIntoShadow(IRBuilder<> &IRB, Value *Addr, Value *Bits, unsigned NumBits,
                    Align Alignment);
  void markLongRange(IRBuilder<> &IRB, Value *Addr, uint64_t Size);
  void markShortRange(IRBuilder<> &IRB, Value *Addr, Value *Len, Align Alignment,
                      unsigned Words);
  void markShortWholeBytes(IRBuilder<> &IRB, Value *Addr, Value *Len,
                           unsigned Words);
  void orShadow(IRBuilder<> &IRB, Value *Shadow, Value *Bits, bool Conditional);
  void storeShadow(IRBuilder<> &IRB, Value *Shadow, Value *New, Align A,
                   bool Conditional);
  Value *shadowAddress(IRBuilder<> &IRB, Value *Addr);
  Value *inWindow(IRBuilder<> &IRB, Value *Addr) {
    return midway::inWindow(IRB, Addr, IntptrTy);
  }

  Stage When;
  ModuleInstrumenter &MI;
  CheckInstrumenter *Checks;
  Function &F;
  const DataLayout &DL;
  IntegerType *IntptrTy;
  PointerType *PtrTy;
  const TargetLibraryInfo &TLI;
  DominatorTree &DT;
  LoopInfo &LI;
  ScalarEvolution &SE;

  SmallVector<Write, 16> Writes;
  SmallVector<Load, 16> Loads; // check builds only
  /// Marks standing for several stores of one block (mergeAdjacentStores).
  struct MergedMark {
    Instruction *After;  // the last of the stores
    Value *Base;
    int64_t Offset;
    uint64_t Size;
    Align Alignment;
    Region R;
  };
  SmallVector<MergedMark, 4> MergedMarks;
  SmallVector<CallBase *, 16> Calls;
  SmallVector<MarkedCall, 4> MarkedCalls;
  SmallVector<ScanfCall, 2> ScanfCalls;
  SmallVector<std::pair<CallBase *, SyscallBuffer>, 2> SyscallCalls;
  SmallVector<LoopRange, 4> Ranges;
};

//===----------------------------------------------------------------------===//
// Collect
//===----------------------------------------------------------------------===//

Value *FunctionInstrumenter::getWritePointer(Instruction *I) {
  if (auto *SI = dyn_cast<StoreInst>(I))
    return SI->getPointerOperand();
  if (auto *RMW = dyn_cast<AtomicRMWInst>(I))
    return RMW->getPointerOperand();
  if (auto *CX = dyn_cast<AtomicCmpXchgInst>(I))
    return CX->getPointerOperand();
  if (auto *MemI = dyn_cast<AnyMemIntrinsic>(I))
    return MemI->getRawDest();
  return cast<IntrinsicInst>(I)->getArgOperand(1); // masked store, scatter
}

/// A masked store or scatter the pass can mirror lane by lane: its elements are
/// whole bytes.
bool isMarkableMaskedWrite(const IntrinsicInst &II, const DataLayout &DL) {
  Type *EltTy = II.getArgOperand(0)->getType()->getScalarType();
  return DL.getTypeSizeInBits(EltTy) % 8 == 0 &&
         DL.typeSizeEqualsStoreSize(EltTy);
}

/// Whether I is a write the pass marks itself, as opposed to a call whose
/// callee it has to judge.
bool FunctionInstrumenter::isWrite(const Instruction &I) const {
  if (const auto *SI = dyn_cast<StoreInst>(&I))
    // A store of an empty struct writes nothing.
    return (!SI->isAtomic() || ClInstrumentAtomics) &&
           !DL.getTypeStoreSize(SI->getValueOperand()->getType()).isZero();
  if (isa<AtomicRMWInst>(I) || isa<AtomicCmpXchgInst>(I))
    return ClInstrumentAtomics;
  if (isa<AnyMemIntrinsic>(I))
    return ClInstrumentMemIntrinsics;
  const auto *II = dyn_cast<IntrinsicInst>(&I);
  return II &&
         (II->getIntrinsicID() == Intrinsic::masked_store ||
          II->getIntrinsicID() == Intrinsic::masked_scatter) &&
         isMarkableMaskedWrite(*II, DL);
}

/// Whether I is a load a check build checks: a load, or a masked load or
/// gather of whole-byte elements, in the flat address space.
bool FunctionInstrumenter::isCheckedLoad(const Instruction &I) const {
  if (const auto *LI = dyn_cast<LoadInst>(&I))
    return LI->getPointerAddressSpace() == 0 &&
           !DL.getTypeStoreSize(LI->getType()).isZero();
  const auto *II = dyn_cast<IntrinsicInst>(&I);
  if (!II || (II->getIntrinsicID() != Intrinsic::masked_load &&
              II->getIntrinsicID() != Intrinsic::masked_gather))
    return false;
  Type *EltTy = II->getType()->getScalarType();
  return isa<FixedVectorType>(II->getType()) &&
         II->getArgOperand(0)->getType()->getPointerAddressSpace() == 0 &&
         DL.getTypeSizeInBits(EltTy) % 8 == 0 && DL.typeSizeEqualsStoreSize(EltTy);
}

void FunctionInstrumenter::collect() {
  for (Instruction &I : instructions(F)) {
    // Marks (ours, or another instrumentation's bookkeeping) are not writes of
    // the program.
    if (I.hasMetadata(LLVMContext::MD_nosanitize))
      continue;
    if (Checks && isCheckedLoad(I))
      Loads.push_back({&I});
    if (isWrite(I)) {
      // Only the flat address space holds the window: x86's segment-relative
      // address spaces (256-258) are offsets, not addresses. A store that a
      // loop nest's range covers (markNests) needs no mark of its own.
      if (getWritePointer(&I)->getType()->getPointerAddressSpace() == 0)
        Writes.push_back(
            {&I, Region::Unknown, When == Stage::Last && MI.isCovered(I)});
    } else if (auto *CB = dyn_cast<CallBase>(&I);
               CB && !isa<AnyMemIntrinsic>(CB)) {
      Calls.push_back(CB);
    }
  }
}

//===----------------------------------------------------------------------===//
// Choose: omission rules that need the function's analyses
//===----------------------------------------------------------------------===//

/// A load of the slot `void *p; posix_memalign(&p, a, n)` filled: p is only
/// read or passed to posix_memalign, so any value read from it is
/// posix_memalign's result (or p's indeterminate initial value, which cannot be
/// written through).
bool FunctionInstrumenter::isPosixMemalignResult(const LoadInst *Load) const {
  const auto *Slot = dyn_cast<AllocaInst>(Load->getPointerOperand());
  if (!Slot)
    return false;
  bool Filled = false;
  for (const User *U : Slot->users()) {
    if (isa<LoadInst>(U))
      continue;
    if (const auto *II = dyn_cast<IntrinsicInst>(U);
        II && II->isLifetimeStartOrEnd())
      continue;
    const auto *CB = dyn_cast<CallBase>(U);
    LibFunc Func;
    if (!CB || !TLI.getLibFunc(*CB, Func) || Func != LibFunc_posix_memalign ||
        CB->getArgOperand(0) != Slot || CB->getArgOperand(1) == Slot ||
        CB->getArgOperand(2) == Slot)
      return false;
    Filled = true;
  }
  return Filled;
}

/// (d) The C library's heap: blocks from malloc, calloc, realloc,
/// aligned_alloc, posix_memalign, strdup or operator new. The runtime reserves
/// the window before main, and the allocator never maps inside a reservation.
/// The allocators are known by TargetLibraryInfo and MemoryBuiltins, or by the
/// allockind LLVM infers for them (not yet inferred at -O0). Calls marked
/// nobuiltin (-fno-builtin) are not trusted to be the C library's. A program
/// that replaces operator new with one returning mw_malloc memory needs
/// -midway-omit-private=false.
bool FunctionInstrumenter::isLibcHeapObject(const Value *Obj) {
  if (const auto *Load = dyn_cast<LoadInst>(Obj))
    return isPosixMemalignResult(Load);
  const auto *CB = dyn_cast<CallBase>(Obj);
  LibFunc Func;
  if (!CB || !TLI.getLibFunc(*CB, Func))
    return false;
  if (isAllocationFn(CB, &TLI))
    return true;
  // Most library functions (fscanf, memcpy, ...) carry no allockind at all.
  Attribute Kind = MI.getLibcAttributes(*CB->getCalledFunction())
                       .getFnAttr(Attribute::AllocKind);
  return Kind.isValid() &&
         (Kind.getAllocKind() & (AllocFnKind::Alloc | AllocFnKind::Realloc)) !=
             AllocFnKind::Unknown;
}

/// main's argv and envp: arrays the kernel put on the process's initial stack, never in
/// the window (so getopt(argc, argv, ...), which may permute argv, writes private memory).
static bool isMainArgument(const Value *Obj) {
  const auto *A = dyn_cast<Argument>(Obj);
  return A && A->getParent()->getName() == "main" && (A->getArgNo() == 1 || A->getArgNo() == 2);
}

bool FunctionInstrumenter::isPrivateObject(const Value *Obj) {
  return isStackObject(Obj) || isNonSharedGlobal(Obj) || isConstantData(Obj) ||
         isLibcHeapObject(Obj) || isNoObject(Obj) || isMainArgument(Obj);
}

/// The region of the memory a pointer (or each lane of a vector of pointers)
/// refers to.
Region FunctionInstrumenter::classifyPointer(const Value *Ptr) {
  // A vector of pointers built from one base: the lanes are in the base's
  // object.
  if (Ptr->getType()->isVectorTy()) {
    const auto *GEP = dyn_cast<GetElementPtrInst>(Ptr);
    if (!GEP || GEP->getPointerOperandType()->isVectorTy())
      return Region::Unknown;
    Ptr = GEP->getPointerOperand();
  }
  SmallVector<const Value *, 4> Objects;
  getUnderlyingObjects(Ptr, Objects);
  bool AllShared = true, AllPrivate = true;
  for (const Value *Obj : Objects) {
    if (isSharedGlobal(Obj))
      AllPrivate = false;
    else if (ClOmitPrivate && isPrivateObject(Obj))
      AllShared = false;
    else
      return Region::Unknown;
  }
  if (AllPrivate)
    return Region::Private;
  return AllShared ? Region::Shared : Region::Unknown;
}

//===----------------------------------------------------------------------===//
// Choose: writes
//===----------------------------------------------------------------------===//

void FunctionInstrumenter::chooseWrites() {
  for (Write &W : Writes) {
    W.R = classifyPointer(getWritePointer(W.I));
    if (W.R == Region::Private)
      ++NumOmittedPrivate;
  }
}

/// Loads of a check build follow the writes' omission rules: what cannot be in
/// the window is not checked.
void FunctionInstrumenter::chooseLoads() {
  for (Load &L : Loads)
    L.R = classifyPointer(isa<LoadInst>(L.I)
                              ? cast<LoadInst>(L.I)->getPointerOperand()
                              : cast<IntrinsicInst>(L.I)->getArgOperand(0));
}

//===----------------------------------------------------------------------===//
// Choose: loop ranges
//
// A store made on every iteration of a loop with a computable trip count, to
// {Start,+,Step} with |Step| its size, writes one contiguous range; so do
// several stores with the same step whose bytes tile the step (a vectorized,
// interleaved loop). The pass marks that range once, on the loop's exit edge,
// instead of after every store: the mark is made only if every iteration ran,
// and covers exactly the bytes written. A loop range that is itself contiguous
// across the iterations of the enclosing loop (a row of a row-major array) is
// treated like a store of the enclosing loop and lifted out of it in turn.
//===----------------------------------------------------------------------===//

void FunctionInstrumenter::planLoopRanges() {
  DenseMap<Loop *, SmallVector<LoopWrite, 4>> Pending;
  for (Write &W : Writes)
    if (std::optional<LoopWrite> LW = getLoopWrite(W))
      Pending[LI.getLoopFor(W.I->getParent())].push_back(std::move(*LW));
  // Innermost loops first, so that an inner loop's range joins its parent's
  // writes before the parent is planned.
  SmallVector<Loop *, 4> Loops = LI.getLoopsInPreorder();
  for (Loop *L : reverse(Loops)) {
    auto It = Pending.find(L);
    if (It == Pending.end())
      continue;
    SmallVector<LoopWrite, 4> LoopWrites = std::move(It->second);
    Pending.erase(It);
    joinAdjacentRanges(L, LoopWrites);
    planLoop(L, LoopWrites, Pending);
  }
}

/// The loop write W makes, if it is a plain store or memory intrinsic in a loop
/// whose address steps through the loop. Volatile and atomic writes keep their
/// own marks.
std::optional<LoopWrite> FunctionInstrumenter::getLoopWrite(Write &W) {
  if (W.R == Region::Private || W.Coalesced)
    return std::nullopt;
  Loop *L = LI.getLoopFor(W.I->getParent());
  if (!L)
    return std::nullopt;
  const SCEV *Size;
  Align Alignment;
  if (auto *SI = dyn_cast<StoreInst>(W.I)) {
    Type *Ty = SI->getValueOperand()->getType();
    TypeSize StoreSize = DL.getTypeStoreSize(Ty);
    if (!SI->isSimple() || Ty->isAggregateType() || StoreSize.isScalable())
      return std::nullopt;
    Size = SE.getConstant(IntptrTy, StoreSize.getFixedValue());
    Alignment = SI->getAlign();
  } else if (auto *MemI = dyn_cast<MemIntrinsic>(W.I)) {
    if (MemI->isVolatile() || !SE.isSCEVable(MemI->getLength()->getType()))
      return std::nullopt;
    Size = SE.getTruncateOrZeroExtend(SE.getSCEV(MemI->getLength()), IntptrTy);
    if (!SE.isLoopInvariant(Size, L))
      return std::nullopt;
    Alignment = MemI->getDestAlign().valueOrOne();
  } else {
    return std::nullopt;
  }
  const auto *Ptr =
      dyn_cast<SCEVAddRecExpr>(addressOf(getWritePointer(W.I)));
  if (!Ptr || Ptr->getLoop() != L || !Ptr->isAffine())
    return std::nullopt;
  return LoopWrite{Ptr, Size, Alignment, W.R, W.I->getParent(), nullptr, {&W}};
}

std::optional<LoopShape> FunctionInstrumenter::getLoopShape(Loop *L) {
  BasicBlock *Latch = L->getLoopLatch();
  if (!Latch || L->getExitingBlock() != Latch ||
      !isa<BranchInst>(Latch->getTerminator()))
    return std::nullopt;
  BasicBlock *Exit = L->getExitBlock();
  const SCEV *BTC = SE.getBackedgeTakenCount(L);
  if (!Exit || isa<SCEVCouldNotCompute>(BTC))
    return std::nullopt;
  // A call that unwinds or longjmps out of the loop would skip the mark after
  // it; one that synchronizes (mw_release, mw_barrier) must see the marks made
  // so far. Neither is guaranteed to return to the loop.
  for (BasicBlock *BB : L->blocks())
    if (!isGuaranteedToTransferExecutionToSuccessor(BB))
      return std::nullopt;
  return LoopShape{Latch, Exit, BTC};
}

bool FunctionInstrumenter::executesOnEveryIteration(const LoopWrite &W,
                                                    const LoopShape &Shape) {
  if (W.To)
    return DT.dominates(BasicBlockEdge(W.From, W.To), Shape.Latch);
  return DT.dominates(W.From, Shape.Latch);
}

namespace {
/// ScalarEvolution has no expression for x << y when y is not a constant, and
/// the optimizer turns k * L, with L = 1 << q a group size (an FFT's), into k <<
/// q. Rewritten as x * (1 << y), with 1 << y a value of its own, the shift shows
/// k's recurrence, and with it the range a nest writes.
class ShiftsAsProducts : public SCEVRewriteVisitor<ShiftsAsProducts> {
public:
  ShiftsAsProducts(ScalarEvolution &SE, function_ref<Value *(Value *)> Power)
      : SCEVRewriteVisitor(SE), Power(Power) {}

  const SCEV *visitUnknown(const SCEVUnknown *Expr) {
    auto *Shl = dyn_cast<BinaryOperator>(Expr->getValue());
    if (!Shl || Shl->getOpcode() != Instruction::Shl ||
        isa<Constant>(Shl->getOperand(1)) || isa<Constant>(Shl->getOperand(0)))
      return Expr;
    if (auto *I = dyn_cast<Instruction>(Shl->getOperand(1)); I && I->isTerminator())
      return Expr;
    return SE.getMulExpr(visit(SE.getSCEV(Shl->getOperand(0))),
                         SE.getSCEV(Power(Shl->getOperand(1))));
  }

private:
  function_ref<Value *(Value *)> Power;
};
} // namespace

/// A write's address as ScalarEvolution sees it; before the vectorizer, with
/// shifts by a variable as products (ShiftsAsProducts).
const SCEV *FunctionInstrumenter::addressOf(Value *Ptr) {
  const SCEV *Address = SE.getSCEV(Ptr);
  if (When != Stage::Nests)
    return Address;
  return ShiftsAsProducts(SE, [this](Value *Shift) {
           return powerOfTwo(Shift);
         }).visit(Address);
}

/// 1 << Shift, computed once where Shift is defined (markNests deletes it if no
/// mark uses it).
Value *FunctionInstrumenter::powerOfTwo(Value *Shift) {
  Value *&Power = Powers[Shift];
  if (!Power) {
    BasicBlock::iterator At =
        isa<Instruction>(Shift)
            ? cast<Instruction>(Shift)->getParent()->getFirstInsertionPt()
            : F.getEntryBlock().getFirstInsertionPt();
    if (auto *I = dyn_cast<Instruction>(Shift); I && !isa<PHINode>(I))
      At = std::next(I->getIterator());
    Power = IRBuilder<>(At->getParent(), At)
                .CreateShl(ConstantInt::get(Shift->getType(), 1), Shift,
                           "midway.power");
  }
  return Power;
}

/// Whether X <= Bytes, unsigned, where Bytes is the length of a range a loop
/// wrote: a count of bytes in the address space, so as a product c * N it does
/// not wrap, and c * M <= c * N follows from M <= N (16 * h against 16 *
/// umax(h, 1), the trip count of a loop rotated without its guard).
bool FunctionInstrumenter::isKnownNoMore(const SCEV *X, const SCEV *Bytes) {
  // X <= umax(X, ...), which isKnownPredicate does not always see.
  auto NoMore = [this](const SCEV *A, const SCEV *B) {
    const auto *Max = dyn_cast<SCEVUMaxExpr>(B);
    return (Max && is_contained(Max->operands(), A)) ||
           SE.isKnownPredicate(ICmpInst::ICMP_ULE, A, B);
  };
  if (NoMore(X, Bytes))
    return true;
  const auto *MX = dyn_cast<SCEVMulExpr>(X);
  const auto *MB = dyn_cast<SCEVMulExpr>(Bytes);
  if (!MX || !MB || MX->getNumOperands() != 2 || MB->getNumOperands() != 2 ||
      MX->getOperand(0) != MB->getOperand(0) ||
      !isa<SCEVConstant>(MX->getOperand(0)))
    return false;
  return NoMore(MX->getOperand(1), MB->getOperand(1));
}

/// Joins the ranges of one inner loop (writes of L) that touch or overlap at a
/// distance only known at run time (FFT's butterflies: x1 = x + 2kL and x2 =
/// x1 + L, each written for L / 2 complex numbers): one range, which L may then
/// find contiguous or mark as rows, instead of two sets of rows, each with a
/// gap where the other lies.
void FunctionInstrumenter::joinAdjacentRanges(
    Loop *L, SmallVectorImpl<LoopWrite> &Writes) {
  auto Joinable = [](const LoopWrite &A, const LoopWrite &B) {
    return A.To && A.From == B.From && A.To == B.To && !A.Rows && !B.Rows &&
           !A.Column && !B.Column && A.R == B.R &&
           A.Conditions == B.Conditions;
  };
  for (bool Joined = true; Joined;) {
    Joined = false;
    for (size_t I = 0; I < Writes.size() && !Joined; ++I)
      for (size_t J = 0; J < Writes.size() && !Joined; ++J) {
        LoopWrite &A = Writes[I], &B = Writes[J];
        if (I == J || !Joinable(A, B))
          continue;
        // B starts within A or where it ends, D bytes after A (an unsigned
        // D: B does not start before A), the same on every iteration of L.
        // Their union is then one range, of one length for all of L.
        const SCEV *D = SE.getMinusSCEV(B.Ptr, A.Ptr);
        if (isa<SCEVCouldNotCompute>(D) || D->getType() != A.Size->getType() ||
            !SE.isLoopInvariant(D, L) ||
            (D != A.Size && !isKnownNoMore(D, A.Size)))
          continue;
        A.Size = D == A.Size ? SE.getAddExpr(A.Size, B.Size)
                             : SE.getUMaxExpr(A.Size, SE.getAddExpr(D, B.Size));
        A.Alignment = std::min(A.Alignment, B.Alignment);
        append_range(A.Writes, B.Writes);
        Writes.erase(Writes.begin() + J);
        Joined = true;
      }
  }
}

/// The guard of W's inner loop, as a condition that makes W a write of every
/// iteration of L: W is the range of an inner loop that may run zero times,
/// entered behind a branch (for (i = 0; i < n; i++), rotated: if (n > 0) do
/// ... while) that runs once on every iteration of L on a condition L does not
/// change. Then either every iteration of L makes W or none does.
std::optional<std::pair<Value *, bool>>
FunctionInstrumenter::guardOf(const LoopWrite &W, Loop *L,
                              const LoopShape &Shape) {
  if (!W.To)
    return std::nullopt;
  Loop *Inner = LI.getLoopFor(W.From);
  if (!Inner || Inner->getParentLoop() != L || W.From != Inner->getLoopLatch())
    return std::nullopt;
  // The preheader's only predecessor ends in the guard; the guard's other
  // successor is where the loop's exit leads.
  BranchInst *Guard = Inner->getLoopGuardBranch();
  if (!Guard || LI.getLoopFor(Guard->getParent()) != L ||
      !DT.dominates(Guard->getParent(), Shape.Latch) ||
      !L->isLoopInvariant(Guard->getCondition()))
    return std::nullopt;
  return std::make_pair(Guard->getCondition(),
                        Guard->getSuccessor(0) == Inner->getLoopPreheader());
}

void FunctionInstrumenter::planLoop(
    Loop *L, ArrayRef<LoopWrite> LoopWrites,
    DenseMap<Loop *, SmallVector<LoopWrite, 4>> &Pending) {
  SmallVector<bool, 8> Done(LoopWrites.size(), false);
  if (std::optional<LoopShape> Shape = getLoopShape(L)) {
    // Group writes that step alike at constant distances, and coalesce each
    // group whose bytes tile the step.
    for (size_t I = 0, E = LoopWrites.size(); I != E; ++I) {
      if (Done[I])
        continue;
      // An inner loop's range behind its guard is made on every iteration or
      // on none: as a write of L, it carries the guard's condition.
      LoopWrite Guarded;
      const LoopWrite *W = &LoopWrites[I];
      if (!executesOnEveryIteration(*W, *Shape)) {
        std::optional<std::pair<Value *, bool>> Guard = guardOf(*W, L, *Shape);
        if (!Guard)
          continue;
        Guarded = *W;
        Guarded.Conditions.push_back(*Guard);
        W = &Guarded;
      }
      // Null for a range that stays put over L (lifted from an inner loop).
      const auto *First = stepsThrough(*W, L);
      SmallVector<const LoopWrite *, 4> Group{W};
      SmallVector<size_t, 4> Members{I};
      // Rows from an inner loop, and writes under conditions, are coalesced
      // alone.
      for (size_t J = I + 1;
           First && J != E && !W->Rows && W->Conditions.empty(); ++J) {
        const auto *Other = stepsThrough(LoopWrites[J], L);
        if (Other && !Done[J] && !LoopWrites[J].Rows &&
            LoopWrites[J].Conditions.empty() &&
            executesOnEveryIteration(LoopWrites[J], *Shape) &&
            Other->getStepRecurrence(SE) == First->getStepRecurrence(SE) &&
            isa<SCEVConstant>(
                SE.getMinusSCEV(Other->getStart(), First->getStart()))) {
          Group.push_back(&LoopWrites[J]);
          Members.push_back(J);
        }
      }
      // Lifts the range into the parent loop if it steps through that one
      // too, or stays put there, or settles it; a column that does not lift
      // is dropped, and its stores keep their marks.
      auto Take = [&](LoopWrite &Range, ArrayRef<size_t> Taken) {
        Loop *Parent = L->getParentLoop();
        const auto *Start = dyn_cast<SCEVAddRecExpr>(Range.Ptr);
        const bool Lifts =
            Parent &&
            ((Start && Start->getLoop() == Parent && Start->isAffine()) ||
             (!Range.Column && SE.isLoopInvariant(Range.Ptr, Parent))) &&
            SE.isLoopInvariant(Range.Size, Parent) &&
            Parent->contains(Shape->Exit) &&
            (!Range.Rows || (SE.isLoopInvariant(Range.Rows, Parent) &&
                             SE.isLoopInvariant(Range.Stride, Parent))) &&
            all_of(Range.Conditions, [&](const std::pair<Value *, bool> &C) {
              return Parent->isLoopInvariant(C.first);
            });
        if (Range.Column && !Lifts)
          return;
        for (size_t J : Taken)
          Done[J] = true;
        if (Lifts)
          Pending[Parent].push_back(std::move(Range));
        else
          settle(Range);
      };
      // An inner loop's range at the same place on every iteration of L.
      if (!First) {
        if (std::optional<LoopWrite> Same = sameAfter(*Shape, *W))
          Take(*Same, Members);
        continue;
      }
      if (std::optional<LoopWrite> Range = coalesce(*Shape, Group)) {
        Take(*Range, Members);
        continue;
      }
      // An inner loop's range that L moves by a step it may not fill (a row
      // of a block, the block's stride not known to be its width): rows.
      if (Group.size() == 1)
        if (std::optional<LoopWrite> Rows = rowsOf(*Shape, *W)) {
          Take(*Rows, Members);
          continue;
        }
      // Bytes with gaps between them (the inner loop of a transpose unrolled:
      // rows j and j + 1): each run of adjacent ones may be a column. Columns
      // are made of the members as they came, so not of a guarded range.
      if (!W->Conditions.empty())
        continue;
      const SCEV *Base = First->getStart();
      for (const AdjacentRun &Run : adjacentRuns(Group, Members)) {
        SmallVector<const LoopWrite *, 4> Part;
        for (size_t J : Run.Members)
          Part.push_back(&LoopWrites[J]);
        if (std::optional<LoopWrite> Column =
                strideAcross(L, *Shape, Part, Base, Run.Lo, Run.Hi))
          Take(*Column, Run.Members);
      }
    }
  }
  for (size_t I = 0, E = LoopWrites.size(); I != E; ++I)
    if (!Done[I])
      settle(LoopWrites[I]);
}

/// The range a group of writes covers over all iterations, as a write on the
/// loop's exit edge; none if their bytes leave gaps.
std::optional<LoopWrite>
FunctionInstrumenter::coalesce(const LoopShape &Shape,
                               ArrayRef<const LoopWrite *> Group) {
  const LoopWrite &First = *Group.front();
  const SCEV *Base = cast<SCEVAddRecExpr>(First.Ptr)->getStart();
  const SCEV *Step = cast<SCEVAddRecExpr>(First.Ptr)->getStepRecurrence(SE);
  const SCEV *BTC =
      SE.getTruncateOrZeroExtend(Shape.BackedgeTakenCount, IntptrTy);
  const SCEV *Start, *Len;
  const auto *ConstStep = dyn_cast<SCEVConstant>(Step);
  if (ConstStep && all_of(Group, [](const LoopWrite *W) {
        return isa<SCEVConstant>(W->Size);
      })) {
    // One iteration writes the union of [Offset, Offset + Size) of the group,
    // at offsets from Base; it must be an interval at least |Step| wide.
    SmallVector<std::pair<int64_t, int64_t>, 4> Intervals;
    for (const LoopWrite *W : Group) {
      const SCEV *Distance =
          SE.getMinusSCEV(cast<SCEVAddRecExpr>(W->Ptr)->getStart(), Base);
      int64_t Offset = cast<SCEVConstant>(Distance)->getAPInt().getSExtValue();
      int64_t Size = cast<SCEVConstant>(W->Size)->getAPInt().getSExtValue();
      Intervals.push_back({Offset, Offset + Size});
    }
    sort(Intervals);
    int64_t Lo = Intervals.front().first, Hi = Intervals.front().second;
    for (auto [IntervalLo, IntervalHi] : Intervals) {
      if (IntervalLo > Hi)
        return std::nullopt;
      Hi = std::max(Hi, IntervalHi);
    }
    int64_t StepValue = ConstStep->getAPInt().getSExtValue();
    uint64_t AbsStep = std::abs(StepValue);
    if (static_cast<uint64_t>(Hi - Lo) < AbsStep)
      return std::nullopt;
    // Iteration k writes [Base + k*Step + Lo, Base + k*Step + Hi).
    Start =
        SE.getAddExpr(Base, SE.getConstant(IntptrTy, Lo, /*isSigned=*/true));
    if (StepValue < 0)
      Start = SE.getAddExpr(Start, SE.getMulExpr(BTC, Step));
    Len = SE.getAddExpr(SE.getMulExpr(BTC, SE.getConstant(IntptrTy, AbsStep)),
                        SE.getConstant(IntptrTy, Hi - Lo));
  } else if (Group.size() == 1 && Step == First.Size) {
    Start = Base;
    Len = SE.getMulExpr(SE.getAddExpr(BTC, SE.getOne(IntptrTy)), First.Size);
  } else if (Group.size() == 1 && Step == SE.getNegativeSCEV(First.Size)) {
    Start = SE.getAddExpr(Base, SE.getMulExpr(BTC, Step));
    Len = SE.getMulExpr(SE.getAddExpr(BTC, SE.getOne(IntptrTy)), First.Size);
  } else {
    return std::nullopt;
  }
  LoopWrite Range{Start,      Len, First.Alignment, First.R, Shape.Latch,
                  Shape.Exit, {},  First.Rows,      First.Stride};
  standFor(Range, Group);
  if (!isExpandable(Shape, Range))
    return std::nullopt;
  return Range;
}

/// Whether W's bounds can be computed after the loop of Shape. The exit block,
/// or the block that will split the exit edge, is dominated by the latch: what
/// the latch's terminator can use, the mark can.
bool FunctionInstrumenter::isExpandable(const LoopShape &Shape,
                                        const LoopWrite &W) {
  SCEVExpander Expander(SE, DL, "midway.range");
  Instruction *Proxy = Shape.Latch->getTerminator();
  for (const SCEV *S : {W.Ptr, W.Size, W.Rows, W.Stride})
    if (S && !Expander.isSafeToExpandAt(S, Proxy))
      return false;
  return true;
}

/// Makes W stand for the writes of Group: their weakest alignment and region,
/// the writes themselves, and the conditions under which they are made (a
/// group with conditions has one write).
void FunctionInstrumenter::standFor(LoopWrite &W,
                                    ArrayRef<const LoopWrite *> Group) {
  W.Conditions = Group.front()->Conditions;
  for (const LoopWrite *G : Group) {
    W.Alignment = std::min(W.Alignment, G->Alignment);
    if (G->R != Region::Shared)
      W.R = Region::Unknown;
    append_range(W.Writes, G->Writes);
  }
}

/// The members of a group (writes of constant size at constant distances)
/// split where their bytes in one iteration leave a gap, in address order;
/// none if a size is not constant.
SmallVector<FunctionInstrumenter::AdjacentRun, 2>
FunctionInstrumenter::adjacentRuns(ArrayRef<const LoopWrite *> Group,
                                   ArrayRef<size_t> Members) {
  SmallVector<AdjacentRun, 2> Runs;
  if (!ClStridedRanges || any_of(Group, [](const LoopWrite *W) {
        return !isa<SCEVConstant>(W->Size);
      }))
    return Runs;
  const SCEV *Base = cast<SCEVAddRecExpr>(Group.front()->Ptr)->getStart();
  SmallVector<std::tuple<int64_t, int64_t, size_t>, 4> Bytes; // [lo, hi), member
  for (size_t K = 0; K != Group.size(); ++K) {
    int64_t Lo = cast<SCEVConstant>(
                     SE.getMinusSCEV(
                         cast<SCEVAddRecExpr>(Group[K]->Ptr)->getStart(), Base))
                     ->getAPInt()
                     .getSExtValue();
    Bytes.push_back(
        {Lo, Lo + cast<SCEVConstant>(Group[K]->Size)->getAPInt().getSExtValue(),
         Members[K]});
  }
  sort(Bytes);
  for (auto [Lo, End, Member] : Bytes) {
    if (Runs.empty() || Lo > Runs.back().Hi)
      Runs.push_back({{}, Lo, End});
    Runs.back().Hi = std::max(Runs.back().Hi, End);
    Runs.back().Members.push_back(Member);
  }
  return Runs;
}

/// The rows a nest writes column by column. A group of stores whose bytes do
/// not fill L's step (dst[j * ld + i] in the inner loop j) writes, over L, one
/// piece of the group's width per iteration, Step apart: as a write of L's
/// parent, that is Rows = trip count pieces starting at the first one. If the
/// parent steps that start by the width (i: the next column), the parent's
/// whole run fills Rows rows, and coalesce makes them one strided mark after
/// it (planLoop lifts the group only then; otherwise its stores keep their
/// marks). Each row is marked exactly: every byte of it was written.
/// Part is one adjacent run of a group, its bytes [Lo, Hi) from Base.
std::optional<LoopWrite>
FunctionInstrumenter::strideAcross(Loop *L, const LoopShape &Shape,
                                   ArrayRef<const LoopWrite *> Part,
                                   const SCEV *Base, int64_t Lo, int64_t Hi) {
  if (!L->getParentLoop() || any_of(Part, [](const LoopWrite *W) {
        return W->To || W->Rows;
      }))
    return std::nullopt;
  const LoopWrite &First = *Part.front();
  const SCEV *BTC =
      SE.getTruncateOrZeroExtend(Shape.BackedgeTakenCount, IntptrTy);
  LoopWrite Column{
      SE.getAddExpr(Base, SE.getConstant(IntptrTy, Lo, /*isSigned=*/true)),
      SE.getConstant(IntptrTy, Hi - Lo),
      First.Alignment,
      First.R,
      Shape.Latch,
      Shape.Exit,
      {},
      SE.getAddExpr(BTC, SE.getOne(IntptrTy)),
      cast<SCEVAddRecExpr>(First.Ptr)->getStepRecurrence(SE),
      /*Column=*/true};
  standFor(Column, Part);
  return Column;
}

/// The rows an inner loop's range W makes over L when L moves it by a step
/// that coalesce could not show it fills: Rows = trip count ranges of W's
/// length, a step apart (daxpy into row j of a block, j * stride apart: the
/// stride is the block's width only at run time). Each row is exactly what W
/// wrote; rows may overlap, which marks do not mind.
std::optional<LoopWrite> FunctionInstrumenter::rowsOf(const LoopShape &Shape,
                                                      const LoopWrite &W) {
  const auto *Ptr = dyn_cast<SCEVAddRecExpr>(W.Ptr);
  if (!ClStridedRanges || !W.To || W.Rows || W.Column || !Ptr ||
      !Ptr->isAffine())
    return std::nullopt;
  const SCEV *BTC =
      SE.getTruncateOrZeroExtend(Shape.BackedgeTakenCount, IntptrTy);
  LoopWrite Rows{Ptr->getStart(),
                 W.Size,
                 W.Alignment,
                 W.R,
                 Shape.Latch,
                 Shape.Exit,
                 W.Writes,
                 SE.getAddExpr(BTC, SE.getOne(IntptrTy)),
                 Ptr->getStepRecurrence(SE),
                 /*Column=*/false,
                 W.Conditions};
  if (!isExpandable(Shape, Rows))
    return std::nullopt;
  return Rows;
}

/// An inner loop's range (or rows) at the same place on every iteration of L,
/// as a write after L: it covers what each iteration wrote.
std::optional<LoopWrite> FunctionInstrumenter::sameAfter(const LoopShape &Shape,
                                                         const LoopWrite &W) {
  if (!W.To || W.Column)
    return std::nullopt;
  LoopWrite Same = W;
  Same.From = Shape.Latch;
  Same.To = Shape.Exit;
  if (!isExpandable(Shape, Same))
    return std::nullopt;
  return Same;
}

/// Marks a loop write that is not coalesced (further) where it is: a store,
/// or a column its parent did not fill rows with, keeps its own marks; an
/// inner loop's range is marked on that loop's exit edge.
void FunctionInstrumenter::settle(const LoopWrite &W) {
  if (!W.To || W.Column)
    return;
  // Before the vectorizer, only ranges of nests: a single loop's range is
  // planned last, on the loop the vectorizer made of it.
  if (When == Stage::Nests && all_of(W.Writes, [&](const Write *Covered) {
        return LI.getLoopFor(Covered->I->getParent()) == LI.getLoopFor(W.From);
      }))
    return;
  Ranges.push_back({W.From, W.To, W.Ptr, W.Size, W.Alignment, W.R, W.Rows,
                    W.Stride, W.Conditions});
  for (Write *Covered : W.Writes)
    Covered->Coalesced = true;
  NumCoalescedInLoop += W.Writes.size();
  ++NumLoopRanges;
  if (W.Rows)
    ++NumStridedRanges;
}

//===----------------------------------------------------------------------===//
// Choose: stores that fill a range together
//===----------------------------------------------------------------------===//

/// Stores of one block to constant offsets from one base (a struct's fields, an
/// unrolled loop's remainder) that together write a contiguous range get one
/// mark, after the last of them: one wide mark instead of a chain of ORs into
/// the same shadow byte, each waiting for the last. A group ends at any
/// instruction that might not pass control on (a call, say), so every store it
/// stands for has run when the mark is made; gaps split it, so it never covers
/// a byte that was not written.
void FunctionInstrumenter::mergeAdjacentStores() {
  // A group: stores whose addresses differ from its first store's (Rep) by
  // constants that ScalarEvolution can compute (row[i][1017], row[i][1018]...).
  struct Group {
    Value *Rep;
    const SCEV *RepAddr;
    SmallVector<std::pair<int64_t, Write *>, 8> Stores;  // offset from Rep
  };
  constexpr unsigned MaxGroups = 16;  // bounds the search per store
  DenseMap<Instruction *, Write *> ByInst;
  for (Write &W : Writes)
    if (!W.Coalesced && W.R != Region::Private)
      if (auto *SI = dyn_cast<StoreInst>(W.I); SI && SI->isSimple() &&
          !DL.getTypeStoreSize(SI->getValueOperand()->getType()).isScalable() &&
          !SI->getValueOperand()->getType()->isAggregateType())
        ByInst[SI] = &W;
  if (ByInst.size() < 2)
    return;
  for (BasicBlock &BB : F) {
    SmallVector<Group, 4> Groups;
    auto Flush = [&] {
      for (Group &G : Groups) {
        llvm::sort(G.Stores, [](const auto &A, const auto &B) { return A.first < B.first; });
        // Split at gaps into runs; a run of two or more stores is merged.
        size_t Begin = 0;
        int64_t End = 0;
        for (size_t I = 0, E = G.Stores.size(); I != E; ++I) {
          auto [Offset, W] = G.Stores[I];
          int64_t Size =
              DL.getTypeStoreSize(cast<StoreInst>(W->I)->getValueOperand()->getType());
          if (I > Begin && Offset > End) {
            if (I - Begin >= 2)
              mergeRun(ArrayRef(G.Stores).slice(Begin, I - Begin), G.Rep);
            Begin = I;
          }
          End = I == Begin ? Offset + Size : std::max(End, Offset + Size);
        }
        if (G.Stores.size() - Begin >= 2)
          mergeRun(ArrayRef(G.Stores).slice(Begin), G.Rep);
      }
      Groups.clear();
    };
    for (Instruction &I : BB) {
      if (auto It = ByInst.find(&I); It != ByInst.end()) {
        Value *Ptr = cast<StoreInst>(I).getPointerOperand();
        const SCEV *Addr = SE.getSCEV(Ptr);
        Group *Into = nullptr;
        int64_t Offset = 0;
        // (LLVM 19's computeConstantDifference sees only two-operand sums;
        // a row-column address such as @g + 256 * i + 4 has three.)
        for (Group &G : Groups)
          if (auto *D = dyn_cast<SCEVConstant>(SE.getMinusSCEV(Addr, G.RepAddr));
              D && D->getAPInt().getSignificantBits() <= 32) {
            Into = &G;
            Offset = D->getAPInt().getSExtValue();
            break;
          }
        if (!Into) {
          if (Groups.size() == MaxGroups)
            Flush();
          Into = &Groups.emplace_back(Group{Ptr, Addr, {}});
        }
        // Stores at constant distances lie in one object: one region.
        Into->Stores.push_back({Offset, It->second});
        continue;
      }
      if (!isGuaranteedToTransferExecutionToSuccessor(&I))
        Flush();
    }
    Flush();
  }
}

void FunctionInstrumenter::mergeRun(ArrayRef<std::pair<int64_t, Write *>> Run,
                                    Value *Base) {
  Instruction *Last = nullptr;
  int64_t Begin = Run.front().first, End = Begin;
  for (const auto &[Offset, W] : Run) {
    auto *SI = cast<StoreInst>(W->I);
    End = std::max<int64_t>(End, Offset + DL.getTypeStoreSize(SI->getValueOperand()->getType()));
    if (!Last || Last->comesBefore(SI))
      Last = SI;
    W->Coalesced = true;
  }
  auto *First = cast<StoreInst>(Run.front().second->I);
  MergedMarks.push_back({Last, Base, Begin, uint64_t(End - Begin), First->getAlign(),
                         Run.front().second->R});
  NumMergedInBlock += Run.size();
}

//===----------------------------------------------------------------------===//
// Choose: calls
//===----------------------------------------------------------------------===//

void FunctionInstrumenter::chooseCalls() {
  for (CallBase *CB : Calls) {
    if (CB->isInlineAsm()) {
      if (ClWarnUnmarked)
        checkInlineAsm(*CB);
      continue;
    }
    Function *Callee = CB->getCalledFunction();
    if (!Callee) {
      SmallVector<StringRef, 4> Names;
      if (std::optional<LibFunc> Func = getIndirectLibCall(*CB, Names);
          Func && ClInstrumentLibCalls && !isa<InvokeInst>(CB) && !CB->isMustTailCall()) {
        Region R = classifyPointer(CB->getArgOperand(0));
        if (R != Region::Private)
          MarkedCalls.push_back({CB, R, Func, std::nullopt, Names});
      }
      if (ClWarnUnknownCalls)
        checkPointerArguments(*CB, AttributeList(), std::nullopt, std::nullopt,
                              "indirect call", AssumedCompiled);
      continue;
    }
    if (Callee->isIntrinsic()) {
      if (ClWarnUnmarked && !isMarkerIntrinsic(Callee->getIntrinsicID()))
        checkPointerArguments(*CB, AttributeList(), std::nullopt, std::nullopt,
                              "intrinsic '" + Callee->getName() + "'",
                              CannotMark);
      continue;
    }
    // A function defined here is instrumented here; a function of the runtime
    // marks what it writes.
    if (!Callee->isDeclaration() || isRuntimeFunction(*Callee))
      continue;
    if (isLibatomicFunction(*Callee)) {
      std::optional<LibatomicWrite> Atomic = getLibatomicWrite(*Callee);
      if (!Atomic || !ClInstrumentAtomics)
        continue;
      Region R = classifyPointer(CB->getArgOperand(Atomic->PtrArg));
      if (R == Region::Private)
        ++NumOmittedPrivate;
      else
        MarkedCalls.push_back({CB, R, std::nullopt, Atomic, {}});
      continue;
    }
    if (std::optional<unsigned> Format =
            getScanfFormatArgument(Callee->getName())) {
      if (chooseScanfCall(*CB, *Format))
        continue;
      // A format the pass cannot read (not a constant, or with %n), of an entry
      // point TLI does not know (__isoc99_fscanf): the arguments after the format
      // are what it may write, not the FILE or the format, and it is the C
      // library's, not a function mwcc built.
      if (!MI.getLibcFunction(*Callee)) {
        for (unsigned ArgNo = *Format + 1, E = CB->arg_size(); ArgNo != E; ++ArgNo)
          if (ClWarnUnmarked &&
              CB->getArgOperand(ArgNo)->getType()->isPointerTy() &&
              !isPrivate(CB->getArgOperand(ArgNo))) {
            warnUnmarked(*CB, "call to '" + sourceName(Callee->getName()) +
                                  "' may write shared memory through argument " +
                                  Twine(ArgNo + 1) + CannotMark);
            break;
          }
        continue;
      }
    }
    if (std::optional<LibFunc> Func = MI.getLibcFunction(*Callee)) {
      chooseLibCall(*CB, *Func);
      continue;
    }
    // Anything else is assumed to be compiled with Midway, and recorded so
    // that the runtime can check the assumption once the program is linked.
    if (ClWarnUnknownCalls)
      checkPointerArguments(*CB, AttributeList(), std::nullopt, std::nullopt,
                            "call to '" + demangle(Callee->getName()) + "'",
                            AssumedCompiled);
    for (unsigned ArgNo = 0, E = CB->arg_size(); ArgNo != E; ++ArgNo)
      if (mayWriteThroughArgument(*CB, ArgNo, AttributeList()) &&
          !isReadOnlyLibcArgumentByName(Callee->getName(), ArgNo) &&
          !isPrivate(CB->getArgOperand(ArgNo))) {
        MI.recordUnverifiedCall(*Callee, *CB, ArgNo);
        break;
      }
  }
}

void FunctionInstrumenter::chooseLibCall(CallBase &CB, LibFunc Func) {
  Function &Callee = *CB.getCalledFunction();
  std::optional<unsigned> Marked;
  if (ClInstrumentLibCalls) {
    Marked = getMarkedArgument(Func);
    if (std::optional<SyscallBuffer> B = getSyscallBuffer(Func);
        B && CB.arg_size() > B->Arg + 1 + B->Items &&
        !isPrivate(CB.getArgOperand(B->Arg)))
      SyscallCalls.push_back({&CB, *B});
  }
  if (Marked) {
    Region R = classifyPointer(CB.getArgOperand(*Marked));
    if (R == Region::Private) {
      ++NumOmittedPrivate;
    } else if (isa<InvokeInst>(CB) || CB.isMustTailCall()) {
      // Nothing can follow a musttail call, and an invoke's normal edge may be
      // shared; C library functions are neither invoked nor musttail in C.
      if (ClWarnUnmarked)
        warnUnmarked(CB, "call to '" + sourceName(Callee.getName()) +
                             "' may write shared memory through argument " +
                             Twine(*Marked + 1) +
                             ", which Midway cannot mark dirty after an invoke "
                             "or musttail call; make it a plain call");
    } else {
      MarkedCalls.push_back({&CB, R, Func, std::nullopt, {}});
    }
  }
  if (ClWarnUnmarked)
    checkPointerArguments(CB, MI.getLibcAttributes(Callee), Marked, Func,
                          "call to '" + sourceName(Callee.getName()) + "'", CannotMark);
}

/// A scanf-family call whose format the pass can read is marked after it
/// returns: each argument the result counts as assigned, by its conversion's
/// size (or the string's length). Returns false, leaving the call to be warned
/// about as any other, if the format cannot be read.
bool FunctionInstrumenter::chooseScanfCall(CallBase &CB, unsigned FormatArg) {
  if (!ClInstrumentLibCalls || CB.arg_size() <= FormatArg ||
      isa<InvokeInst>(CB) || CB.isMustTailCall())
    return false;
  std::optional<SmallVector<ScanfWrite, 8>> Writes =
      parseScanfFormat(CB.getArgOperand(FormatArg), DL.getPointerSize());
  if (!Writes || CB.arg_size() < FormatArg + 1 + Writes->size())
    return false;
  ScanfCall C{&CB, FormatArg + 1, {}};
  for (const ScanfWrite &W : *Writes) {
    if (isPrivate(CB.getArgOperand(C.FirstArg + W.Index)))
      ++NumOmittedPrivate;
    else
      C.Writes.push_back(W);
  }
  if (!C.Writes.empty())
    ScanfCalls.push_back(std::move(C));
  return true;
}

/// Whether CB may write memory through pointer argument ArgNo, by the
/// attributes of the call, of its callee and Known (what LLVM infers for a C
/// library function).
bool FunctionInstrumenter::mayWriteThroughArgument(const CallBase &CB,
                                                   unsigned ArgNo,
                                                   AttributeList Known) const {
  if (!CB.getArgOperand(ArgNo)->getType()->isPtrOrPtrVectorTy())
    return false;
  // A byval argument is a copy the callee owns.
  if (CB.isByValArgument(ArgNo) || CB.onlyReadsMemory(ArgNo) ||
      Known.hasParamAttr(ArgNo, Attribute::ReadOnly) ||
      Known.hasParamAttr(ArgNo, Attribute::ReadNone))
    return false;
  MemoryEffects ME = CB.getMemoryEffects() & Known.getMemoryEffects();
  return isModSet(ME.getModRef(IRMemLocation::ArgMem)) ||
         isModSet(ME.getModRef(IRMemLocation::Other));
}

/// Warns for each pointer argument of CB, other than Skip (the one the pass
/// marks), through which the callee may write memory that is not provably
/// private.
void FunctionInstrumenter::checkPointerArguments(
    CallBase &CB, AttributeList Known, std::optional<unsigned> Skip,
    std::optional<LibFunc> Func, const Twine &Callee, StringRef Advice) {
  std::optional<unsigned> Format;
  if (Func)
    Format = getPrintfFormatArgument(*Func);
  Value *Freed = getFreedOperand(&CB, &TLI);
  for (unsigned ArgNo = 0, E = CB.arg_size(); ArgNo != E; ++ArgNo) {
    Value *Arg = CB.getArgOperand(ArgNo);
    if (ArgNo == Skip || !mayWriteThroughArgument(CB, ArgNo, Known))
      continue;
    // free, realloc and operator delete release their argument; they do not
    // write data into it.
    if (Arg == Freed || Known.hasParamAttr(ArgNo, Attribute::AllocatedPointer))
      continue;
    if (Func && (isLibcObjectArgument(*Func, ArgNo) ||
                 isReadOnlyLibcArgument(*Func, ArgNo)))
      continue;
    if (Format && ArgNo > *Format && !formatMayWrite(CB.getArgOperand(*Format)))
      continue;
    if (isPrivate(Arg))
      continue;
    warnUnmarked(CB, Callee + " may write shared memory through argument " +
                         Twine(ArgNo + 1) + Advice);
  }
}

/// Whether `A` and `B` point into one object: the same underlying object, or (at -O0)
/// two loads of the same local pointer variable.
static bool sameObject(const Value *A, const Value *B) {
  A = getUnderlyingObject(A);
  B = getUnderlyingObject(B);
  if (A == B)
    return true;
  const auto *LA = dyn_cast<LoadInst>(A), *LB = dyn_cast<LoadInst>(B);
  return LA && LB && isa<AllocaInst>(LA->getPointerOperand()->stripPointerCasts()) &&
         LA->getPointerOperand()->stripPointerCasts() == LB->getPointerOperand()->stripPointerCasts();
}

/// Whether the program marks what `Asm` writes through `Ptr` itself: a call of
/// mw_written on the same object that the asm can reach.
static bool writtenAfter(CallBase &Asm, const Value *Ptr) {
  for (Instruction &I : instructions(*Asm.getFunction())) {
    const auto *Call = dyn_cast<CallBase>(&I);
    const Function *F = Call ? Call->getCalledFunction() : nullptr;
    if (F && F->getName() == "mw_written" && Call->arg_size() == 2 &&
        sameObject(Call->getArgOperand(0), Ptr) && isPotentiallyReachable(&Asm, Call))
      return true;
  }
  return false;
}

/// Inline asm stores through its indirect ("=*m") outputs, and anywhere if it
/// clobbers "memory"; the pass cannot see those stores. An empty asm with a
/// memory clobber is a compiler barrier and stores nothing.
void FunctionInstrumenter::checkInlineAsm(CallBase &CB) {
  const auto *IA = cast<InlineAsm>(CB.getCalledOperand());
  unsigned ArgNo = 0;  // the call's argument: indirect outputs and inputs
  unsigned Operand = 0;  // the asm's %N: every output, then every input
  for (const InlineAsm::ConstraintInfo &C : IA->ParseConstraints()) {
    switch (C.Type) {
    case InlineAsm::isOutput:
      if (C.isIndirect) {
        if (!isPrivate(CB.getArgOperand(ArgNo)) && !writtenAfter(CB, CB.getArgOperand(ArgNo)))
          warnUnmarked(CB, "inline asm may write shared memory through operand %" +
                               Twine(Operand) + AsmCannotMark);
        ++ArgNo;
      }
      ++Operand;
      break;
    case InlineAsm::isInput:
      ++ArgNo;
      ++Operand;
      break;
    case InlineAsm::isClobber:
      if (is_contained(C.Codes, "{memory}") && !IA->getAsmString().empty())
        warnUnmarked(CB, "inline asm clobbers \"memory\" and may write shared "
                         "memory" +
                             AsmCannotMark);
      break;
    case InlineAsm::isLabel:
      break;
    }
  }
}

//===----------------------------------------------------------------------===//
// Instrument
//===----------------------------------------------------------------------===//

/// Before the vectorizer: marks the ranges of loop nests after the nests, and
/// tags the stores they cover, which the last stage then leaves unmarked. Here
/// each loop of the source is one loop; the vectorizer splits an inner loop
/// into a vector loop and a remainder, neither of which makes a range on every
/// iteration of its parent, so after it the nest would keep a mark per row and
/// per remainder store (LU's daxpy into a block's rows).
bool FunctionInstrumenter::markNests() {
  const bool Changed = instrument();
  for (auto &[Shift, Power] : Powers)
    if (Power->use_empty())
      cast<Instruction>(Power)->eraseFromParent();
  if (!Changed)
    return false;
  for (const Write &W : Writes)
    if (W.Coalesced)
      MI.tagCovered(*W.I);
  NumNestRanges += Ranges.size();
  // The marks touch memory that the program does not see (the shadow, the
  // runtime's state): say so, or callers optimized after this pass could be
  // told less than the function does.
  F.setMemoryEffects(F.getMemoryEffects() | MemoryEffects::inaccessibleMemOnly());
  return true;
}

bool FunctionInstrumenter::instrument() {
  // Loop ranges first: expanding their bounds needs ScalarEvolution, and so the
  // loop structure as it was analysed (SplitEdge keeps DT and LI up to date).
  SCEVExpander Expander(SE, DL, "midway.range");
  DenseMap<std::pair<BasicBlock *, BasicBlock *>, Instruction *> MarkPoints;
  struct RangeMark {
    Instruction *InsertBefore;
    Value *Start, *Len, *Rows, *Stride;
    const LoopRange &Range;
  };
  SmallVector<RangeMark, 4> RangeMarks;
  for (const LoopRange &Range : Ranges) {
    // Mark in a block entered only from the loop's latch, so that the mark is
    // made only after the loop ran.
    Instruction *&InsertBefore = MarkPoints[{Range.Latch, Range.Exit}];
    if (!InsertBefore) {
      BasicBlock *Block = Range.Exit->getSinglePredecessor() == Range.Latch
                              ? Range.Exit
                              : SplitEdge(Range.Latch, Range.Exit, &DT, &LI,
                                          nullptr, "midway.loop.exit");
      InsertBefore = &*Block->getFirstInsertionPt();
    }
    Value *Start = Expander.expandCodeFor(Range.Start, PtrTy, InsertBefore);
    Value *Len = Expander.expandCodeFor(Range.Len, IntptrTy, InsertBefore);
    Value *Rows = nullptr, *Stride = nullptr;
    if (Range.Rows) {
      Rows = Expander.expandCodeFor(Range.Rows, IntptrTy, InsertBefore);
      Stride = Expander.expandCodeFor(Range.Stride, IntptrTy, InsertBefore);
    }
    RangeMarks.push_back({InsertBefore, Start, Len, Rows, Stride, Range});
  }

  // Every mark is either made unconditionally or behind a window check.
  auto Count = [](Region R) {
    ++(R == Region::Shared ? NumDirectShared : NumRangeChecked);
  };

  bool Changed = !RangeMarks.empty();
  for (const RangeMark &Mark : RangeMarks) {
    Count(Mark.Range.R);
    // A nest's range is marked only if its inner loops' guards let them run.
    Instruction *InsertBefore = Mark.InsertBefore;
    if (!Mark.Range.Conditions.empty()) {
      IRBuilder<> IRB(InsertBefore);
      Value *Cond = nullptr;
      for (auto [Guard, Holds] : Mark.Range.Conditions) {
        Value *C = Holds ? Guard : IRB.CreateNot(Guard);
        Cond = Cond ? IRB.CreateAnd(Cond, C) : C;
      }
      InsertBefore =
          SplitBlockAndInsertIfThen(Cond, InsertBefore, /*Unreachable=*/false);
    }
    if (Mark.Rows) {
      markRows(InsertBefore, Mark.Range.Latch->getTerminator()->getDebugLoc(),
               Mark.Start, Mark.Len, Mark.Rows, Mark.Stride,
               Mark.Range.R == Region::Unknown);
      continue;
    }
    markRange(InsertBefore, Mark.Range.Latch->getTerminator()->getDebugLoc(),
              Mark.Start, Mark.Len, Mark.Range.Alignment,
              Mark.Range.R == Region::Unknown, /*InlineShort=*/true);
  }
  if (When == Stage::Nests)
    return Changed;

  for (const MergedMark &M : MergedMarks) {
    Changed = true;
    Count(M.R);
    Instruction *After = M.After->getNextNode();
    IRBuilder<> IRB(After);
    Value *Start = M.Offset ? IRB.CreateConstGEP1_64(IRB.getInt8Ty(), M.Base, M.Offset)
                            : M.Base;
    markBytes(After, M.After->getDebugLoc(), Start, {{0, M.Size}}, M.Alignment,
              M.R == Region::Unknown);
  }

  for (Write &W : Writes) {
    if (W.R == Region::Private || W.Coalesced)
      continue;
    Changed = true;
    ++NumInstrumentedWrites;
    Count(W.R);
    if (auto *SI = dyn_cast<StoreInst>(W.I))
      instrumentStore(SI, W.R);
    else if (auto *RMW = dyn_cast<AtomicRMWInst>(W.I))
      instrumentAtomicRMW(RMW, W.R);
    else if (auto *CX = dyn_cast<AtomicCmpXchgInst>(W.I))
      instrumentCmpXchg(CX, W.R);
    else if (auto *MemI = dyn_cast<AnyMemIntrinsic>(W.I))
      instrumentMemIntrinsic(MemI, W.R);
    else if (cast<IntrinsicInst>(W.I)->getIntrinsicID() ==
             Intrinsic::masked_store)
      instrumentMaskedStore(cast<IntrinsicInst>(W.I), W.R);
    else
      instrumentMaskedScatter(cast<IntrinsicInst>(W.I), W.R);
  }

  for (const MarkedCall &C : MarkedCalls) {
    Changed = true;
    ++NumLibCallsMarked;
    Count(C.R);
    if (C.Atomic)
      instrumentLibatomicCall(C);
    else
      instrumentLibCall(C);
  }
  for (const ScanfCall &C : ScanfCalls) {
    Changed = true;
    ++NumLibCallsMarked;
    instrumentScanfCall(C);
  }
  for (const auto &[CB, B] : SyscallCalls) {
    Changed = true;
    ++NumSyscallBuffers;
    IRBuilder<> IRB(CB);
    IRB.SetCurrentDebugLocation(CB->getDebugLoc());
    auto Arg = [&](unsigned ArgNo) {
      return IRB.CreateZExtOrTrunc(CB->getArgOperand(ArgNo), IntptrTy);
    };
    Value *Len = Arg(B.Arg + 1);
    if (B.Items)
      Len = IRB.CreateMul(Len, Arg(B.Arg + 2));
    IRB.CreateCall(MI.getBeforeSyscallFn(),
                   {CB->getArgOperand(B.Arg), Len, IRB.getInt32(B.KernelWrites)});
  }
  return Changed;
}

/// Stores, atomic or not: the bytes of the stored type.
void FunctionInstrumenter::instrumentStore(StoreInst *SI, Region R) {
  Type *Ty = SI->getValueOperand()->getType();
  TypeSize Size = DL.getTypeStoreSize(Ty);
  Instruction *After = SI->getNextNode();
  if (Size.isScalable()) {
    IRBuilder<> IRB(After);
    markRange(After, SI->getDebugLoc(), SI->getPointerOperand(),
              IRB.CreateTypeSize(IntptrTy, Size), SI->getAlign(),
              R == Region::Unknown);
    return;
  }
  SmallVector<ByteRange, 4> Bytes;
  collectWrittenBytes(Ty, 0, DL, Bytes);
  markBytes(After, SI->getDebugLoc(), SI->getPointerOperand(), Bytes,
            SI->getAlign(), R == Region::Unknown);
}

/// atomicrmw always writes, whatever the old value was.
void FunctionInstrumenter::instrumentAtomicRMW(AtomicRMWInst *RMW, Region R) {
  uint64_t Size = DL.getTypeStoreSize(RMW->getValOperand()->getType());
  markBytes(RMW->getNextNode(), RMW->getDebugLoc(), RMW->getPointerOperand(),
            {{0, Size}}, RMW->getAlign(), R == Region::Unknown);
}

/// cmpxchg writes only when it succeeds; a failed one must not be marked.
void FunctionInstrumenter::instrumentCmpXchg(AtomicCmpXchgInst *CX, Region R) {
  uint64_t Size = DL.getTypeStoreSize(CX->getNewValOperand()->getType());
  Instruction *After = CX->getNextNode();
  IRBuilder<> IRB(After);
  IRB.SetCurrentDebugLocation(CX->getDebugLoc());
  Value *Succeeded = IRB.CreateExtractValue(CX, 1, "midway.cmpxchg.success");
  markBytes(After, CX->getDebugLoc(), CX->getPointerOperand(), {{0, Size}},
            CX->getAlign(), R == Region::Unknown, Succeeded);
}

/// memset, memcpy, memmove, their .inline and element-wise atomic forms: the
/// destination range.
void FunctionInstrumenter::instrumentMemIntrinsic(AnyMemIntrinsic *MemI,
                                                  Region R) {
  markRange(MemI->getNextNode(), MemI->getDebugLoc(), MemI->getRawDest(),
            MemI->getLength(), MemI->getDestAlign().valueOrOne(),
            R == Region::Unknown);
}

/// A masked store marks one bit per byte of each lane it wrote: a vector of
/// lane-wide all-ones or zeros, selected by the mask and read as one integer, is
/// exactly that bit pattern. Without MW_SHARED provenance each lane is checked
/// against the window: lanes are contiguous, and a masked-off lane may lie
/// outside the object. So the OR starts at the first byte written, never at the
/// store's address (whose lane may be masked off, before the object or the
/// window, where the dirty map is not even reserved), and covers at most 32 bits
/// of the pattern at a time: shifted by that byte's p & 7 they fit an i64, whose
/// eight shadow bytes never reach more than 7 past the last one marked (a whole
/// 64-byte pattern would need an i128 reaching 15 past, a 128-byte one an i256).
/// Nothing is touched where no lane was written.
void FunctionInstrumenter::instrumentMaskedStore(IntrinsicInst *II, Region R) {
  auto *DataTy = cast<FixedVectorType>(II->getArgOperand(0)->getType());
  Value *Ptr = II->getArgOperand(1);
  Align Alignment = cast<ConstantInt>(II->getArgOperand(2))->getAlignValue();
  Value *Mask = II->getArgOperand(3);
  Instruction *After = II->getNextNode();
  IRBuilder<> IRB(After);
  IRB.SetCurrentDebugLocation(II->getDebugLoc());
  unsigned NumLanes = DataTy->getNumElements();
  uint64_t LaneSize = DL.getTypeStoreSize(DataTy->getElementType());
  if (R == Region::Unknown) {
    auto *LaneAddrTy = FixedVectorType::get(IntptrTy, NumLanes);
    Value *Base = IRB.CreateVectorSplat(NumLanes, IRB.CreatePtrToInt(Ptr, IntptrTy));
    Value *Offsets = IRB.CreateMul(IRB.CreateStepVector(LaneAddrTy),
                                   ConstantInt::get(LaneAddrTy, LaneSize));
    Mask = IRB.CreateAnd(Mask, inWindow(IRB, IRB.CreateAdd(Base, Offsets)));
  }
  auto *LaneBitsTy = FixedVectorType::get(IRB.getIntNTy(LaneSize), NumLanes);
  Value *Lanes = IRB.CreateSelect(Mask, Constant::getAllOnesValue(LaneBitsTy),
                                  Constant::getNullValue(LaneBitsTy));
  unsigned NumBits = NumLanes * LaneSize;
  Value *Bits = IRB.CreateBitCast(Lanes, IRB.getIntNTy(NumBits));
  // A chunk's first written byte starts a lane or the chunk.
  Align FirstAlign = std::min(commonAlignment(Alignment, LaneSize),
                              commonAlignment(Alignment, MaskedChunkBits));
  for (unsigned Lo = 0; Lo < NumBits; Lo += MaskedChunkBits) {
    unsigned N = std::min<unsigned>(MaskedChunkBits, NumBits - Lo);
    IRB.SetInsertPoint(After);
    Value *Chunk = Lo ? IRB.CreateLShr(Bits, Lo) : Bits;
    if (N != NumBits)
      Chunk = IRB.CreateTrunc(Chunk, IRB.getIntNTy(N));
    IRB.SetInsertPoint(SplitBlockAndInsertIfThen(
        IRB.CreateIsNotNull(Chunk), After, /*Unreachable=*/false));
    Value *First = IRB.CreateBinaryIntrinsic(Intrinsic::cttz, Chunk,
                                             IRB.getTrue()); // Chunk != 0
    Value *Offset = IRB.CreateZExt(First, IntptrTy);
    if (Lo)
      Offset = IRB.CreateAdd(Offset, ConstantInt::get(IntptrTy, Lo));
    orIntoShadow(IRB, IRB.CreateGEP(IRB.getInt8Ty(), Ptr, Offset),
                 IRB.CreateLShr(Chunk, First), N, FirstAlign);
  }
  ++(R == Region::Unknown ? NumRangeChecked : NumDirectShared);
}

/// A scatter writes lanes anywhere: each lane written, and in the window, is
/// marked on its own.
void FunctionInstrumenter::instrumentMaskedScatter(IntrinsicInst *II,
                                                   Region R) {
  auto *DataTy = cast<FixedVectorType>(II->getArgOperand(0)->getType());
  Value *Ptrs = II->getArgOperand(1);
  Align Alignment = cast<ConstantInt>(II->getArgOperand(2))->getAlignValue();
  Value *Mask = II->getArgOperand(3);
  uint64_t LaneSize = DL.getTypeStoreSize(DataTy->getElementType());
  Instruction *After = II->getNextNode();
  for (unsigned I = 0, E = DataTy->getNumElements(); I != E; ++I) {
    IRBuilder<> IRB(After);
    IRB.SetCurrentDebugLocation(II->getDebugLoc());
    markBytes(After, II->getDebugLoc(), IRB.CreateExtractElement(Ptrs, I),
              {{0, LaneSize}}, Alignment, R == Region::Unknown,
              IRB.CreateExtractElement(Mask, I));
  }
}

/// The range a modelled C library call wrote, computed from its arguments and
/// result right after it returns. It is computed only where it is marked: after
/// a call that succeeded, and, without MW_SHARED provenance, for a destination
/// in the window.
void FunctionInstrumenter::instrumentLibCall(const MarkedCall &C) {
  CallBase &CB = *C.CB;
  LibFunc Func = *C.Func;
  Instruction *After = CB.getNextNode();
  IRBuilder<> IRB(After);
  IRB.SetCurrentDebugLocation(CB.getDebugLoc());
  // Continue in a block entered only if Cond holds.
  auto If = [&](Value *Cond) {
    After = SplitBlockAndInsertIfThen(Cond, After, /*Unreachable=*/false);
    IRB.SetInsertPoint(After);
  };
  auto Arg = [&](unsigned ArgNo) {
    return IRB.CreateZExtOrTrunc(CB.getArgOperand(ArgNo), IntptrTy);
  };
  auto Result = [&]() { return IRB.CreateZExtOrTrunc(&CB, IntptrTy); };
  auto Distance = [&](Value *To, Value *From) {
    Value *ToInt = IRB.CreatePtrToInt(To, IntptrTy);
    return IRB.CreateSub(ToInt, IRB.CreatePtrToInt(From, IntptrTy));
  };
  auto One = ConstantInt::get(IntptrTy, 1);
  // A *printf's result is the length of the string without its NUL, or
  // negative.
  auto Printed = [&]() {
    Value *WithNul = IRB.CreateAdd(&CB, ConstantInt::get(CB.getType(), 1));
    return IRB.CreateZExt(
        IRB.CreateBinaryIntrinsic(Intrinsic::smax, WithNul,
                                  ConstantInt::get(CB.getType(), 0)),
        IntptrTy);
  };

  if (!C.IfCallee.empty()) {
    Value *Called = nullptr;
    for (StringRef Name : C.IfCallee) {
      Value *Is = IRB.CreateICmpEQ(
          CB.getCalledOperand(), MI.M.getOrInsertFunction(Name, CB.getFunctionType()).getCallee());
      Called = Called ? IRB.CreateOr(Called, Is) : Is;
    }
    If(Called);
  }
  Value *Dst = CB.getArgOperand(*getMarkedArgument(Func));
  switch (Func) {
  case LibFunc_strcat: // writes from the old end of the string
  case LibFunc_strcat_chk:
  case LibFunc_strncat:
  case LibFunc_strncat_chk: {
    Value *OldLen = IRBuilder<>(&CB).CreateCall(MI.getStrLenFn(), {Dst});
    Dst = IRB.CreateGEP(IRB.getInt8Ty(), Dst, OldLen);
    break;
  }
  case LibFunc_fgets: // returns NULL on failure
  case LibFunc_fgets_unlocked:
    If(IRB.CreateIsNotNull(&CB));
    break;
  case LibFunc_realpath: // returns the buffer, or a malloc'd one if it was NULL
    If(IRB.CreateIsNotNull(&CB));
    Dst = &CB;
    break;
  default:
    break;
  }
  if (C.R == Region::Unknown)
    If(inWindow(IRB, Dst));

  Value *Len;
  switch (Func) {
  case LibFunc_memcpy:
  case LibFunc_memcpy_chk:
  case LibFunc_memmove:
  case LibFunc_memmove_chk:
  case LibFunc_memset:
  case LibFunc_memset_chk:
  case LibFunc_mempcpy:
  case LibFunc_mempcpy_chk:
  case LibFunc_strncpy: // write exactly n bytes, padding with NULs
  case LibFunc_strncpy_chk:
  case LibFunc_stpncpy:
  case LibFunc_stpncpy_chk:
  case LibFunc_bcopy:
    Len = Arg(2);
    break;
  case LibFunc_bzero:
    Len = Arg(1);
    break;
  case LibFunc_memccpy: // stops after the byte c, returning the next address
  case LibFunc_memccpy_chk: {
    Value *Copied = Distance(&CB, Dst);
    Value *NotFound = IRB.CreateIsNull(&CB);
    Len = IRB.CreateSelect(NotFound, Arg(3), Copied);
    break;
  }
  case LibFunc_strcpy:
  case LibFunc_strcpy_chk:
  case LibFunc_strcat:
  case LibFunc_strcat_chk:
  case LibFunc_strncat:
  case LibFunc_strncat_chk:
  case LibFunc_fgets:
  case LibFunc_fgets_unlocked:
  case LibFunc_realpath:
    Len = IRB.CreateAdd(IRB.CreateCall(MI.getStrLenFn(), {Dst}), One);
    break;
  case LibFunc_stpcpy: // returns the address of the copied NUL
  case LibFunc_stpcpy_chk:
    Len = IRB.CreateAdd(Distance(&CB, Dst), One);
    break;
  case LibFunc_strlcpy: // returns strlen(src); writes min(that + 1, size) bytes
  case LibFunc_strlcpy_chk: {
    Value *WithNul = IRB.CreateAdd(Result(), One);
    Len = IRB.CreateBinaryIntrinsic(Intrinsic::umin, WithNul, Arg(2));
    break;
  }
  case LibFunc_read: // return the byte count, or -1
  case LibFunc_pread:
  case LibFunc_readlink:
    Len = IRB.CreateZExtOrTrunc(
        IRB.CreateBinaryIntrinsic(Intrinsic::smax, &CB,
                                  ConstantInt::get(CB.getType(), 0)),
        IntptrTy);
    break;
  case LibFunc_fread: // returns the number of whole items read
  case LibFunc_fread_unlocked: {
    Value *ItemSize = Arg(1);
    Len = IRB.CreateMul(ItemSize, Result());
    break;
  }
  case LibFunc_sprintf:
  case LibFunc_sprintf_chk:
  case LibFunc_siprintf:
  case LibFunc_small_sprintf:
  case LibFunc_vsprintf:
  case LibFunc_vsprintf_chk:
    Len = Printed();
    break;
  case LibFunc_snprintf: // truncate to n bytes, NUL included
  case LibFunc_snprintf_chk:
  case LibFunc_vsnprintf:
  case LibFunc_vsnprintf_chk: {
    Value *Bytes = Printed();
    Len = IRB.CreateBinaryIntrinsic(Intrinsic::umin, Bytes, Arg(1));
    break;
  }
  case LibFunc_posix_memalign: // stores the block's address on success (0)
    Len = IRB.CreateSelect(IRB.CreateIsNull(&CB),
                           ConstantInt::get(IntptrTy, DL.getPointerSize()),
                           ConstantInt::get(IntptrTy, 0));
    break;
  default:
    llvm_unreachable("not a modelled library function");
  }
  // Here Dst is known to be in the window (or a shared global).
  if (Checks)
    Checks->check(After, CB, Dst, Len, MW_ACCESS_STORE | MW_ACCESS_RANGE,
                  Region::Shared);
  markRange(After, CB.getDebugLoc(), Dst, Len, Align(1), /*CheckWindow=*/false);
}

/// A scanf writes the argument of its K-th assigning conversion only if its
/// result (the number assigned, or EOF) is greater than K: a conversion that
/// failed leaves its object as it was, and marking it would publish this
/// rank's stale copy over another rank's write.
void FunctionInstrumenter::instrumentScanfCall(const ScanfCall &C) {
  CallBase &CB = *C.CB;
  Instruction *After = CB.getNextNode();
  for (const ScanfWrite &W : C.Writes) {
    Value *Dst = CB.getArgOperand(C.FirstArg + W.Index);
    Region R = classifyPointer(Dst);
    IRBuilder<> IRB(After);
    IRB.SetCurrentDebugLocation(CB.getDebugLoc());
    Value *Assigned = IRB.CreateICmpSGT(
        &CB, ConstantInt::get(CB.getType(), W.Index));
    Instruction *Then =
        SplitBlockAndInsertIfThen(Assigned, After, /*Unreachable=*/false);
    if (R == Region::Unknown) {
      IRBuilder<> InWin(Then);
      Then = SplitBlockAndInsertIfThen(inWindow(InWin, Dst), Then,
                                       /*Unreachable=*/false);
    }
    IRBuilder<> At(Then);
    At.SetCurrentDebugLocation(CB.getDebugLoc());
    Value *Len =
        W.Size ? static_cast<Value *>(ConstantInt::get(IntptrTy, W.Size))
               : At.CreateAdd(At.CreateCall(MI.getStrLenFn(), {Dst}),
                              ConstantInt::get(IntptrTy, 1));
    if (Checks)
      Checks->check(Then, CB, Dst, Len, MW_ACCESS_STORE | MW_ACCESS_RANGE,
                    Region::Shared);
    markRange(Then, CB.getDebugLoc(), Dst, Len, Align(1), /*CheckWindow=*/false);
  }
}

/// libatomic writes its object, of the size its name or argument says; a
/// compare-exchange only if it returns true.
void FunctionInstrumenter::instrumentLibatomicCall(const MarkedCall &C) {
  CallBase &CB = *C.CB;
  const LibatomicWrite &W = *C.Atomic;
  Instruction *After = CB.getNextNode();
  if (W.OnlyIfSucceeded) {
    IRBuilder<> IRB(After);
    Value *Succeeded =
        CB.getType()->isIntegerTy(1) ? &CB : IRB.CreateIsNotNull(&CB);
    After = SplitBlockAndInsertIfThen(Succeeded, After, /*Unreachable=*/false);
  }
  IRBuilder<> IRB(After);
  Value *Len =
      W.SizeArg ? IRB.CreateZExtOrTrunc(CB.getArgOperand(*W.SizeArg), IntptrTy)
                : ConstantInt::get(IntptrTy, W.Size);
  if (Checks)
    Checks->check(After, CB, CB.getArgOperand(W.PtrArg), Len,
                  MW_ACCESS_STORE | MW_ACCESS_ATOMIC | (W.SizeArg ? MW_ACCESS_RANGE : 0),
                  C.R);
  markRange(After, CB.getDebugLoc(), CB.getArgOperand(W.PtrArg), Len, Align(1),
            C.R == Region::Unknown);
}

//===----------------------------------------------------------------------===//
// Checks (check builds only; Checks.cpp emits them)
//
// Every access that is not provably private gets its own check before it, marks
// or no marks: a store whose mark a loop range or a merged mark stands for is
// still checked where it is. The checks of C library calls and libatomic calls
// are made with their marks, after the call (instrumentLibCall,
// instrumentLibatomicCall), when the range they wrote is known.
//===----------------------------------------------------------------------===//

bool FunctionInstrumenter::instrumentChecks() {
  bool Changed = false;
  for (const Write &W : Writes)
    if (W.R != Region::Private) {
      checkWrite(W);
      Changed = true;
    }
  for (const Load &L : Loads)
    if (L.R != Region::Private) {
      checkLoad(L);
      Changed = true;
    }
  return Changed;
}

void FunctionInstrumenter::checkWrite(const Write &W) {
  Instruction *I = W.I;
  IRBuilder<> IRB(I);
  if (auto *SI = dyn_cast<StoreInst>(I)) {
    Checks->check(I, *I, SI->getPointerOperand(),
                  IRB.CreateTypeSize(IntptrTy,
                                     DL.getTypeStoreSize(SI->getValueOperand()->getType())),
                  MW_ACCESS_STORE | (SI->isAtomic() ? MW_ACCESS_ATOMIC : 0), W.R);
  } else if (isa<AtomicRMWInst>(I) || isa<AtomicCmpXchgInst>(I)) {
    Type *Ty = isa<AtomicRMWInst>(I)
                   ? cast<AtomicRMWInst>(I)->getValOperand()->getType()
                   : cast<AtomicCmpXchgInst>(I)->getNewValOperand()->getType();
    Checks->check(I, *I, getWritePointer(I),
                  ConstantInt::get(IntptrTy, DL.getTypeStoreSize(Ty)),
                  MW_ACCESS_LOAD | MW_ACCESS_STORE | MW_ACCESS_ATOMIC, W.R);
  } else if (auto *MemI = dyn_cast<AnyMemIntrinsic>(I)) {
    // The source of a copy is read: a load check of its own, by its own region.
    if (auto *Transfer = dyn_cast<AnyMemTransferInst>(MemI))
      if (Region SrcR = classifyPointer(Transfer->getRawSource());
          SrcR != Region::Private)
        Checks->check(I, *I, Transfer->getRawSource(), MemI->getLength(),
                      MW_ACCESS_LOAD | MW_ACCESS_RANGE, SrcR);
    Checks->check(I, *I, MemI->getRawDest(), MemI->getLength(),
                  MW_ACCESS_STORE | MW_ACCESS_RANGE |
                      (isa<AtomicMemIntrinsic>(MemI) ? MW_ACCESS_ATOMIC : 0),
                  W.R);
  } else {
    auto *II = cast<IntrinsicInst>(I);
    auto *DataTy = cast<FixedVectorType>(II->getArgOperand(0)->getType());
    Checks->checkLanes(I, *I, II->getArgOperand(1),
                       DL.getTypeStoreSize(DataTy->getElementType()),
                       DataTy->getNumElements(), II->getArgOperand(3),
                       MW_ACCESS_STORE, W.R);
  }
}

void FunctionInstrumenter::checkLoad(const Load &L) {
  Instruction *I = L.I;
  if (auto *LI = dyn_cast<LoadInst>(I)) {
    IRBuilder<> IRB(I);
    Checks->check(I, *I, LI->getPointerOperand(),
                  IRB.CreateTypeSize(IntptrTy, DL.getTypeStoreSize(LI->getType())),
                  MW_ACCESS_LOAD | (LI->isAtomic() ? MW_ACCESS_ATOMIC : 0), L.R);
    return;
  }
  auto *II = cast<IntrinsicInst>(I);
  auto *DataTy = cast<FixedVectorType>(II->getType());
  // masked.load(ptr, align, mask, passthru), masked.gather(ptrs, ...): the
  // same operands.
  Checks->checkLanes(I, *I, II->getArgOperand(0),
                     DL.getTypeStoreSize(DataTy->getElementType()),
                     DataTy->getNumElements(), II->getArgOperand(2),
                     MW_ACCESS_LOAD, L.R);
}

//===----------------------------------------------------------------------===//
// Marks
//===----------------------------------------------------------------------===//

/// The shadow byte of p: (p >> 3) + MW_SHADOW_OFFSET, formed with integer
/// arithmetic (the offset never fits a relocation or a displacement).
Value *FunctionInstrumenter::shadowAddress(IRBuilder<> &IRB, Value *Addr) {
  Value *Shadow = IRB.CreateAdd(
      IRB.CreateLShr(IRB.CreatePtrToInt(Addr, IntptrTy), 3),
      ConstantInt::get(IntptrTy, ShadowOffset));
  return IRB.CreateIntToPtr(Shadow, PtrTy);
}

} // namespace

Value *midway::inWindow(IRBuilder<> &IRB, Value *Addr, IntegerType *IntptrTy) {
  Type *AddrTy = Addr->getType();
  Type *IntTy = AddrTy->isVectorTy()
                    ? VectorType::get(IntptrTy, cast<VectorType>(AddrTy))
                    : static_cast<Type *>(IntptrTy);
  if (AddrTy->isPtrOrPtrVectorTy())
    Addr = IRB.CreatePtrToInt(Addr, IntTy);
  return IRB.CreateICmpULT(
      IRB.CreateSub(Addr, ConstantInt::get(IntTy, WindowBase)),
      ConstantInt::get(IntTy, WindowSize), "midway.in.window");
}

namespace {

/// Marks [Addr, Addr + Len) before InsertBefore, checking first that Addr is
/// in the window if asked to. A constant length is marked inline. A length
/// known only at run time is marked by the runtime, whose call costs little
/// next to a memcpy of unknown size; a loop's range (InlineShort) is often a
/// short row instead (a block of 16 doubles), and one that ends within
/// -midway-inline-range-bytes of its first shadow byte is marked inline, the
/// runtime marking the longer ones. Private memory never reaches past the
/// inline window check.
void FunctionInstrumenter::markRange(Instruction *InsertBefore,
                                     const DebugLoc &Loc, Value *Addr,
                                     Value *Len, Align Alignment,
                                     bool CheckWindow, bool InlineShort) {
  if (auto *ConstLen = dyn_cast<ConstantInt>(Len)) {
    if (!ConstLen->isZero())
      markBytes(InsertBefore, Loc, Addr, {{0, ConstLen->getZExtValue()}},
                Alignment, CheckWindow);
    return;
  }
  IRBuilder<> IRB(InsertBefore);
  IRB.SetCurrentDebugLocation(Loc);
  if (CheckWindow)
    IRB.SetInsertPoint(SplitBlockAndInsertIfThen(
        inWindow(IRB, Addr), InsertBefore, /*Unreachable=*/false));
  Len = IRB.CreateZExtOrTrunc(Len, IntptrTy);
  // As in markBits: the start may be known better aligned than the stores.
  Alignment = std::max(Alignment, Addr->getPointerAlignment(DL));
  if (unsigned Words = std::min(ClInlineRangeBytes.getValue(), 512u) / 64;
      InlineShort && Words) {
    // Short: 0 < Len and (Addr & 7) + Len <= 64 * Words, as one compare. A
    // length of 0 wraps around and goes to the runtime, which marks nothing.
    Value *Room = ConstantInt::get(IntptrTy, 64 * Words);
    if (Alignment.value() < BytesPerShadowByte)
      Room = IRB.CreateSub(Room, IRB.CreateAnd(IRB.CreatePtrToInt(Addr, IntptrTy),
                                               BytesPerShadowByte - 1));
    Value *Short = IRB.CreateICmpULT(
        IRB.CreateSub(Len, ConstantInt::get(IntptrTy, 1)), Room, "midway.short");
    Instruction *ThenTerm, *ElseTerm;
    SplitBlockAndInsertIfThenElse(Short, &*IRB.GetInsertPoint(), &ThenTerm,
                                  &ElseTerm);
    IRB.SetInsertPoint(ThenTerm);
    // Doubles and wider: the range is whole shadow bytes, stored, not ORed.
    if (Alignment.value() >= BytesPerShadowByte &&
        computeKnownBits(Len, DL).countMinTrailingZeros() >= 3)
      markShortWholeBytes(IRB, Addr, Len, Words);
    else
      markShortRange(IRB, Addr, Len, Alignment, Words);
    IRB.SetInsertPoint(ElseTerm);
  }
  IRB.CreateCall(MI.getMarkRangeFn(), {Addr, Len})
      ->setMetadata(LLVMContext::MD_nosanitize,
                    MDNode::get(F.getContext(), {}));
}

/// Marks Rows ranges of Len bytes, the first at Addr and each Stride bytes
/// after the last, before InsertBefore: a call to the runtime, which loops over
/// them (one call for a whole block of a transpose). A block lies in one
/// object, so checking its first byte against the window checks them all.
void FunctionInstrumenter::markRows(Instruction *InsertBefore,
                                    const DebugLoc &Loc, Value *Addr, Value *Len,
                                    Value *Rows, Value *Stride,
                                    bool CheckWindow) {
  IRBuilder<> IRB(InsertBefore);
  IRB.SetCurrentDebugLocation(Loc);
  if (CheckWindow)
    IRB.SetInsertPoint(SplitBlockAndInsertIfThen(
        inWindow(IRB, Addr), InsertBefore, /*Unreachable=*/false));
  IRB.CreateCall(MI.getMarkRowsFn(), {Addr, Len, Stride, Rows})
      ->setMetadata(LLVMContext::MD_nosanitize, MDNode::get(F.getContext(), {}));
}

/// Marks the given bytes at Addr before InsertBefore, if Cond holds and, when
/// asked to check, Addr is in the window. A write stays within one object and
/// an object is either in the window or not, so checking Addr checks them all.
void FunctionInstrumenter::markBytes(Instruction *InsertBefore,
                                     const DebugLoc &Loc, Value *Addr,
                                     ArrayRef<ByteRange> Bytes, Align Alignment,
                                     bool CheckWindow, Value *Cond) {
  IRBuilder<> IRB(InsertBefore);
  IRB.SetCurrentDebugLocation(Loc);
  if (CheckWindow) {
    Value *InWindow = inWindow(IRB, Addr);
    Cond = Cond ? IRB.CreateAnd(Cond, InWindow) : InWindow;
  }
  if (Cond)
    IRB.SetInsertPoint(
        SplitBlockAndInsertIfThen(Cond, InsertBefore, /*Unreachable=*/false));
  for (const ByteRange &Range : Bytes) {
    Value *Ptr = Range.Offset ? IRB.CreateConstGEP1_64(IRB.getInt8Ty(), Addr,
                                                       Range.Offset)
                              : Addr;
    markBits(IRB, Ptr, Range.Size, commonAlignment(Alignment, Range.Offset));
  }
}

/// Sets the dirty bits of the Size bytes at Addr. Bytes that fill whole shadow
/// bytes (Addr 8-aligned, Size a multiple of 8) are a store of all-ones: one
/// integer store for 1 to 16 shadow bytes (also at -O0, where a small memset
/// would be a libc call), a memset beyond. Anything else ORs Size bits, shifted
/// by Addr & 7, into the shadow (midway.h's contract).
void FunctionInstrumenter::markBits(IRBuilder<> &IRB, Value *Addr,
                                    uint64_t Size, Align Alignment) {
  // A loop's range is only as aligned as its stores, but its start may be known
  // better (an aligned MW_SHARED array): the better it is known, the more of the
  // mark is whole shadow bytes.
  Alignment = std::max(Alignment, Addr->getPointerAlignment(DL));
  if (Alignment.value() >= BytesPerShadowByte && Size % BytesPerShadowByte == 0) {
    uint64_t ShadowBytes = Size / BytesPerShadowByte;
    Align ShadowAlign(Alignment.value() / BytesPerShadowByte);
    Value *Shadow = shadowAddress(IRB, Addr);
    if (ShadowBytes <= 16 && isPowerOf2_64(ShadowBytes)) {
      storeShadow(IRB, Shadow,
                  Constant::getAllOnesValue(IRB.getIntNTy(ShadowBytes * 8)),
                  ShadowAlign, ClConditionalMarks);
      return;
    }
    IRB.CreateMemSet(Shadow, IRB.getInt8(0xFF), ShadowBytes, ShadowAlign)
        ->setMetadata(LLVMContext::MD_nosanitize, MDNode::get(F.getContext(), {}));
    return;
  }
  if (Size + BytesPerShadowByte - 1 > MaxMarkBits) {
    markLongRange(IRB, Addr, Size);
    return;
  }
  orIntoShadow(IRB, Addr,
               ConstantInt::get(IRB.getIntNTy(Size), APInt::getAllOnes(Size)),
               Size, Alignment);
}

/// Marks Size bytes (Size > 120) at an address whose place in its shadow byte
/// is known only at run time (a row of floats, a packed struct), inline: the
/// bits of the first and last shadow bytes are ORed in, and the whole bytes
/// between, ⌊Size/8⌋ - 1 or ⌊Size/8⌋ of them depending on the address, are
/// covered exactly by two memsets of ⌊Size/8⌋ - 1 bytes, one from each end.
/// Constant lengths make both memsets a few vector stores.
void FunctionInstrumenter::markLongRange(IRBuilder<> &IRB, Value *Addr,
                                         uint64_t Size) {
  MDNode *NoSanitize = MDNode::get(F.getContext(), {});
  Value *Begin = IRB.CreatePtrToInt(Addr, IntptrTy);
  Value *End = IRB.CreateAdd(Begin, ConstantInt::get(IntptrTy, Size));
  Value *First = shadowAddress(IRB, Addr);
  Value *Last = shadowAddress(IRB, IRB.CreateIntToPtr(End, PtrTy));
  auto LowBits = [&](Value *A) {
    return IRB.CreateTrunc(IRB.CreateAnd(A, BytesPerShadowByte - 1), IRB.getInt8Ty());
  };
  // First shadow byte: bits Begin & 7 .. 7.
  orShadow(IRB, First, IRB.CreateShl(IRB.getInt8(0xFF), LowBits(Begin)), false);
  uint64_t Middle = Size / BytesPerShadowByte - 1;
  IRB.CreateMemSet(IRB.CreateConstGEP1_64(IRB.getInt8Ty(), First, 1),
                   IRB.getInt8(0xFF), Middle, Align(1))
      ->setMetadata(LLVMContext::MD_nosanitize, NoSanitize);
  IRB.CreateMemSet(IRB.CreateGEP(IRB.getInt8Ty(), Last,
                                 ConstantInt::get(IntptrTy, -int64_t(Middle))),
                   IRB.getInt8(0xFF), Middle, Align(1))
      ->setMetadata(LLVMContext::MD_nosanitize, NoSanitize);
  // Last shadow byte: bits 0 .. (End & 7) - 1; none when End is 8-aligned (the
  // byte then belongs to the data after the range and is ORed with zero).
  Value *TailBits = IRB.CreateSub(IRB.CreateShl(IRB.getInt8(1), LowBits(End)),
                                  IRB.getInt8(1));
  orShadow(IRB, Last, TailBits, false);
}

/// Marks Len bytes at Addr, 0 < (Addr & 7) + Len <= 64 * Words, inline: one
/// word-wide OR of the shadow per 64 bytes, each made only if the range reaches
/// into its word. Every word ORed thus starts at a shadow byte holding marked
/// bits and reaches at most 7 bytes past the last one (midway.h's contract,
/// as for orIntoShadow), and its bits outside the range are ORed with zero.
void FunctionInstrumenter::markShortRange(IRBuilder<> &IRB, Value *Addr,
                                          Value *Len, Align Alignment,
                                          unsigned Words) {
  Type *WordTy = IRB.getInt64Ty();
  Value *AllOnes = Constant::getAllOnesValue(WordTy);
  // The range's bits, counted from bit 0 of its first shadow byte: [Shift, End).
  Value *Shift = nullptr;
  Value *End = IRB.CreateZExtOrTrunc(Len, WordTy);
  if (Alignment.value() < BytesPerShadowByte) {
    Shift = IRB.CreateZExtOrTrunc(
        IRB.CreateAnd(IRB.CreatePtrToInt(Addr, IntptrTy), BytesPerShadowByte - 1),
        WordTy);
    End = IRB.CreateAdd(Shift, End);
  }
  Value *Shadow = shadowAddress(IRB, Addr);
  for (unsigned J = 0; J < Words; ++J) {
    if (J)  // word J has marked bits only if the range ends past its bit 0
      IRB.SetInsertPoint(SplitBlockAndInsertIfThen(
          IRB.CreateICmpUGT(End, ConstantInt::get(WordTy, 64 * J)),
          &*IRB.GetInsertPoint(), /*Unreachable=*/false));
    // Bits [0, End - 64J) of the word, all 64 if the range goes on past it: a
    // right shift of all-ones by 64(J + 1) - End, saturated at 0 (and at most
    // 63, since End > 64J).
    Value *Bits = IRB.CreateLShr(
        AllOnes, IRB.CreateBinaryIntrinsic(Intrinsic::usub_sat,
                                           ConstantInt::get(WordTy, 64 * (J + 1)),
                                           End));
    if (!J && Shift)
      Bits = IRB.CreateAnd(Bits, IRB.CreateShl(AllOnes, Shift));
    orShadow(IRB, J ? IRB.CreateConstGEP1_64(IRB.getInt8Ty(), Shadow, 8 * J) : Shadow,
             Bits, false);
  }
}

/// Marks Len bytes at Addr inline, Addr 8-aligned and Len a multiple of 8 with
/// 0 < Len <= 64 * Words: the N = Len / 8 shadow bytes from Addr's are all ones,
/// stored as pairs of overlapping stores, one from the front and one from the
/// back (1, 2 or 4 bytes wide for N < 8; 8 bytes wide, pair J made when
/// N > 16 J, for N >= 8). Stores rather than ORs: no load, so a mark does not
/// wait for the last one to the same shadow word (FFT's butterflies mark two
/// adjacent ranges of 16 bytes at its first stages). Every byte stored is in
/// [0, N).
void FunctionInstrumenter::markShortWholeBytes(IRBuilder<> &IRB, Value *Addr,
                                               Value *Len, unsigned Words) {
  Value *Shadow = shadowAddress(IRB, Addr);
  Value *N = IRB.CreateLShr(Len, ConstantInt::get(IntptrTy, 3), "midway.shadow.bytes");
  Instruction *Join = &*IRB.GetInsertPoint();
  // Stores all ones `Bytes` wide at Shadow + From and at Shadow + N - Back.
  auto Pair = [&](unsigned Bytes, uint64_t From, uint64_t Back) {
    Value *Ones = Constant::getAllOnesValue(IRB.getIntNTy(8 * Bytes));
    storeShadow(IRB, From ? IRB.CreateConstGEP1_64(IRB.getInt8Ty(), Shadow, From) : Shadow,
                Ones, Align(1), false);
    Value *End = IRB.CreateGEP(IRB.getInt8Ty(), Shadow, N);
    storeShadow(IRB, IRB.CreateConstGEP1_64(IRB.getInt8Ty(), End, -int64_t(Back)), Ones,
                Align(1), false);
  };
  // N < 8: a pair 4 or 2 bytes wide, or one byte.
  Instruction *Small, *Large;
  SplitBlockAndInsertIfThenElse(IRB.CreateICmpULT(N, ConstantInt::get(IntptrTy, 8)),
                                Join, &Small, &Large);
  IRB.SetInsertPoint(Small);
  for (unsigned Bytes : {4u, 2u}) {
    Instruction *Then, *Else;
    SplitBlockAndInsertIfThenElse(
        IRB.CreateICmpUGE(N, ConstantInt::get(IntptrTy, Bytes)), &*IRB.GetInsertPoint(),
        &Then, &Else);
    IRB.SetInsertPoint(Then);
    Pair(Bytes, 0, Bytes);
    IRB.SetInsertPoint(Else);
  }
  storeShadow(IRB, Shadow, IRB.getInt8(0xFF), Align(1), false);
  // N >= 8: pairs of 8 bytes.
  IRB.SetInsertPoint(Large);
  for (unsigned J = 0; 16 * J < 8 * Words; ++J) {
    if (J)
      IRB.SetInsertPoint(SplitBlockAndInsertIfThen(
          IRB.CreateICmpUGT(N, ConstantInt::get(IntptrTy, 16 * J)), &*IRB.GetInsertPoint(),
          /*Unreachable=*/false));
    Pair(8, 8 * J, 8 * (J + 1));
  }
  IRB.SetInsertPoint(Join);
}

/// ORs Bits into the shadow at Shadow, as wide as Bits: a plain read-modify-write
/// (midway.h: the runtime clears partial shadow bytes with an atomic AND, so the
/// race can leave a spurious mark but never loses one).
void FunctionInstrumenter::orShadow(IRBuilder<> &IRB, Value *Shadow, Value *Bits,
                                    bool Conditional) {
  LoadInst *Old = IRB.CreateAlignedLoad(Bits->getType(), Shadow, Align(1));
  Old->setMetadata(LLVMContext::MD_nosanitize, MDNode::get(F.getContext(), {}));
  storeShadow(IRB, Shadow, IRB.CreateOr(Old, Bits), Align(1), Conditional);
}

/// Stores a mark's new shadow value. Conditional (markBits' marks, of a known
/// size up to 128 bytes, with -midway-conditional-marks), the store happens only
/// if the value changes: re-marking data already marked then costs a load and a
/// predictable branch rather than a write to the shadow's cache line. Longer
/// marks and those of run-time length (a loop's range, made once after it)
/// would pay the loads for nothing.
void FunctionInstrumenter::storeShadow(IRBuilder<> &IRB, Value *Shadow,
                                       Value *New, Align A, bool Conditional) {
  MDNode *NoSanitize = MDNode::get(F.getContext(), {});
  Instruction *Continue = &*IRB.GetInsertPoint();
  if (Conditional) {
    Value *Old = nullptr;
    if (auto *Or = dyn_cast<BinaryOperator>(New);
        Or && Or->getOpcode() == Instruction::Or && isa<LoadInst>(Or->getOperand(0)))
      Old = Or->getOperand(0);  // an OR into the shadow: its load is the old value
    else
      Old = IRB.CreateAlignedLoad(New->getType(), Shadow, A);
    cast<Instruction>(Old)->setMetadata(LLVMContext::MD_nosanitize, NoSanitize);
    IRB.SetInsertPoint(SplitBlockAndInsertIfThen(IRB.CreateICmpNE(New, Old), Continue,
                                                 /*Unreachable=*/false));
  }
  IRB.CreateAlignedStore(New, Shadow, A)->setMetadata(LLVMContext::MD_nosanitize,
                                                      NoSanitize);
  IRB.SetInsertPoint(Continue);
}

/// ORs NumBits dirty bits (Bits, bit i for byte Addr + i) into the shadow of
/// Addr, shifted by Addr & 7, through the narrowest integer that holds the
/// shifted bits. Every shadow byte it rewrites holds bits of the written bytes
/// or of bytes at most 8 shadow bytes further on (midway.h keeps those
/// committed), and OR leaves the bits it does not set as they were.
void FunctionInstrumenter::orIntoShadow(IRBuilder<> &IRB, Value *Addr,
                                        Value *Bits, unsigned NumBits,
                                        Align Alignment) {
  // Addr is a multiple of its alignment, so Addr & 7 is at most 8 - alignment.
  uint64_t MaxShift = Alignment.value() >= BytesPerShadowByte
                          ? 0
                          : BytesPerShadowByte - Alignment.value();
  unsigned Width = std::max<unsigned>(8, PowerOf2Ceil(NumBits + MaxShift));
  IntegerType *WideTy = IRB.getIntNTy(Width);
  Value *Mask = IRB.CreateZExt(Bits, WideTy);
  if (MaxShift) {
    Value *Shift = IRB.CreateAnd(IRB.CreatePtrToInt(Addr, IntptrTy),
                                 BytesPerShadowByte - 1);
    Mask = IRB.CreateShl(Mask, IRB.CreateZExtOrTrunc(Shift, WideTy));
  }
  orShadow(IRB, shadowAddress(IRB, Addr), Mask, ClConditionalMarks);
}

//===----------------------------------------------------------------------===//
// Pass and plugin
//===----------------------------------------------------------------------===//

/// Marks a function as instrumented, so that running the pass again (the plugin
/// given twice) adds nothing.
constexpr StringLiteral InstrumentedAttr = "midway-instrumented";

/// Functions the pass leaves alone: the runtime's (compiled without the pass
/// anyway; this keeps them exact if they are not), naked functions (their body
/// is asm; code added there would run without a frame), functions asking for no
/// instrumentation, and functions it already instrumented.
bool isExempt(const Function &F) {
  return isRuntimeFunction(F) || F.hasFnAttribute(Attribute::Naked) ||
         F.hasFnAttribute(Attribute::DisableSanitizerInstrumentation) ||
         F.hasFnAttribute(InstrumentedAttr);
}

/// `-stats` in a release libLLVM prints only "Statistics are disabled" at exit.
/// Midway's counters register with libLLVM's statistics registry whenever
/// statistics are enabled, so clang's -print-stats and -save-stats, which print
/// the registry themselves, list them; for -stats the pass prints the registry,
/// in LLVM's format, at the end of its run.
void printStatisticsForStatsOption() {
  if (!AreStatisticsEnabled())
    return;
  StringMap<cl::Option *> &Options = cl::getRegisteredOptions();
  auto It = Options.find("stats");
  if (It == Options.end() || !It->second->getNumOccurrences())
    return;
  PrintStatistics(*CreateInfoOutputFile());
}

class MidwayInstrumentPass : public PassInfoMixin<MidwayInstrumentPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM) {
    if (!ClInstrument)
      return PreservedAnalyses::all();
    // The marks OR bit patterns into multi-byte integers, little end first.
    if (M.getDataLayout().isBigEndian()) {
      M.getContext().emitError("midway: shared memory needs a little-endian "
                               "target; '" + M.getTargetTriple() + "' is big-endian");
      return PreservedAnalyses::all();
    }
    // The window ends above 1 TiB and the shadow is 16 TiB above it.
    if (unsigned Bits = M.getDataLayout().getPointerSizeInBits(); Bits != 64) {
      M.getContext().emitError(
          "midway: shared memory needs 64-bit pointers; '" +
          M.getTargetTriple() + "' has " + Twine(Bits) + "-bit pointers");
      return PreservedAnalyses::all();
    }
    FunctionAnalysisManager &FAM =
        MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
    // Shared globals first, so that every omission rule sees them shared.
    bool Changed = placeSharedGlobals(M);
    auto Objects = describeSharedGlobals(M);
    Changed |= !Objects.empty();
    ModuleInstrumenter MI(M);
    std::optional<CheckInstrumenter> Checks;
    if (isCheckBuild())
      Checks.emplace(M, std::move(Objects));
    for (Function &F : M) {
      if (F.isDeclaration() || isExempt(F))
        continue;
      if (FunctionInstrumenter(MI, Checks ? &*Checks : nullptr, F, FAM).run())
        FAM.invalidate(F, PreservedAnalyses::none());
      F.addFnAttr(InstrumentedAttr);
      Changed = true;
    }
    MI.emitLinkRecords();
    printStatisticsForStatsOption();
    return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }

  // optnone functions (all of them at -O0) need their marks too.
  static bool isRequired() { return true; }

  // The pipeline name, so that -print-pipeline-passes output parses back.
  static StringRef name() { return "midway-instrument"; }
};

/// The first stage: loop nests' ranges, planned and marked before the
/// vectorizer (FunctionInstrumenter::markNests). MidwayInstrumentPass does the
/// rest last, and checks the target.
class MidwayNestRangesPass : public PassInfoMixin<MidwayNestRangesPass> {
public:
  PreservedAnalyses run(Function &F, FunctionAnalysisManager &FAM) {
    Module &M = *F.getParent();
    if (!ClInstrument || !ClNestRanges || !ClLoopRanges || F.isDeclaration() ||
        isExempt(F) || M.getDataLayout().isBigEndian() ||
        M.getDataLayout().getPointerSizeInBits() != 64)
      return PreservedAnalyses::all();
    // Loops with preheaders and dedicated exits, which the loop passes after
    // this one would make anyway: a range is marked on its loop's exit, and an
    // inner loop's guard is found by its preheader.
    PreservedAnalyses Simplified = LoopSimplifyPass().run(F, FAM);
    FAM.invalidate(F, Simplified);
    ModuleInstrumenter MI(M);
    if (!FunctionInstrumenter(MI, nullptr, F, FAM, Stage::Nests).run())
      return Simplified;
    return PreservedAnalyses::none();
  }

  static StringRef name() { return "midway-nest-ranges"; }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "MidwayInstrument", "0.1",
          [](PassBuilder &PB) {
            // Last in the optimizer pipeline, at -O0 too: after vectorization
            // and the passes that delete, merge or widen stores.
            PB.registerOptimizerLastEPCallback(
                [](ModulePassManager &MPM, OptimizationLevel) {
                  MPM.addPass(MidwayInstrumentPass());
                });
            // Loop nests' ranges before the vectorizer splits their loops
            // (only when optimizing: at -O0 there is no vectorizer).
            PB.registerVectorizerStartEPCallback(
                [](FunctionPassManager &FPM, OptimizationLevel) {
                  FPM.addPass(MidwayNestRangesPass());
                });
            PB.registerPipelineParsingCallback(
                [](StringRef Name, ModulePassManager &MPM,
                   ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != "midway-instrument")
                    return false;
                  MPM.addPass(MidwayInstrumentPass());
                  return true;
                });
            PB.registerPipelineParsingCallback(
                [](StringRef Name, FunctionPassManager &FPM,
                   ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != "midway-nest-ranges")
                    return false;
                  FPM.addPass(MidwayNestRangesPass());
                  return true;
                });
          }};
}
