//===- SharedGlobals.cpp - Which global variables live in shared memory ---===//
//
// Part of Midway, a distributed shared memory for C.
//
//===----------------------------------------------------------------------===//
//
// Static shared data is linked into the shared window (midway.h): section
// MW_SHARED_SECTION, the variables with initial values, at MW_WINDOW_BASE, and
// MW_SHARED_BSS_SECTION, the zero-initialized ones, right after it (mwcc's link
// layout, lib/midway.ld). The second is NOBITS, like .bss: it takes no room in
// the executable file, so a program with a 64 MiB shared array is not 64 MiB.
//
// A global variable gets there in one of three ways:
//   * MW_SHARED, an explicit section attribute;
//   * #pragma clang section data="mw_shared" (or bss="mw_shared"), which clang
//     records as "data-section"/"bss-section" attributes that the backend
//     applies by the variable's kind (bss-section to zero-initialized data,
//     data-section to the rest), never as a section the IR shows;
//   * -midway-shared-globals (mwcc -fmidway-shared-globals): every global and
//     static variable the module defines that can be shared, as threads share
//     them.
// isInSharedSection answers "is this global shared" for all three, and
// placeSharedGlobals, which runs before anything is instrumented, rewrites each
// shared definition into the one form both the backend and the link layout
// agree on, so that what the pass assumes is what the linker does.
//
//===----------------------------------------------------------------------===//

#include "MidwayInstrument.h"

#include "llvm/ADT/Statistic.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/Support/CommandLine.h"

using namespace llvm;
using namespace midway;

#define DEBUG_TYPE "midway-instrument"

static cl::opt<bool> ClSharedGlobals(
    "midway-shared-globals",
    cl::desc("Share every global and static variable the module defines, as "
             "threads do (mwcc -fmidway-shared-globals); thread-locals, "
             "constants, and variables in other sections stay private"),
    cl::init(false), cl::cat(MidwayCategory));

ALWAYS_ENABLED_STATISTIC(NumSharedByOption,
                         "Number of globals shared by -midway-shared-globals");
ALWAYS_ENABLED_STATISTIC(NumSharedZeroInit,
                         "Number of shared globals placed in the NOBITS "
                         "section (zero-initialized)");

static constexpr StringLiteral DataSectionAttr = "data-section";
static constexpr StringLiteral BssSectionAttr = "bss-section";

static bool isSharedSectionName(StringRef Name) {
  return Name == MW_SHARED_SECTION || Name == MW_SHARED_BSS_SECTION;
}

/// The section a `#pragma clang section` attribute of GV names, or "".
static StringRef getImplicitSection(const GlobalVariable &GV, StringRef Attr) {
  return GV.hasAttribute(Attr) ? GV.getAttribute(Attr).getValueAsString()
                               : StringRef();
}

/// Data the backend would put in .bss: writable and all zeros. (It also
/// accepts an undef initializer.)
static bool isZeroInitialized(const GlobalVariable &GV) {
  return !GV.isConstant() && GV.hasInitializer() &&
         (GV.getInitializer()->isNullValue() ||
          isa<UndefValue>(GV.getInitializer()));
}

bool midway::isInSharedSection(const GlobalVariable &GV) {
  // Thread-local data is per thread wherever its attributes say it goes.
  if (GV.isThreadLocal())
    return false;
  if (GV.hasSection())
    return isSharedSectionName(GV.getSection());
  // The pragma's attributes apply to definitions only: a declaration's
  // definition may be anywhere (an unknown pointer is window-checked), and
  // the backend does not apply them to common symbols or to constants, which
  // go to rodata-section and relro-section.
  if (GV.isDeclaration() || GV.hasCommonLinkage() || GV.isConstant())
    return false;
  // data="mw_shared" shares the zero-initialized variables of its range too,
  // whatever -fno-zero-initialized-in-bss says (which the IR does not show):
  // placeSharedGlobals moves them. bss="mw_shared" alone shares only those.
  if (isSharedSectionName(getImplicitSection(GV, DataSectionAttr)))
    return true;
  return isSharedSectionName(getImplicitSection(GV, BssSectionAttr)) &&
         isZeroInitialized(GV);
}

/// Name prefixes of variables that instrumentation or language runtimes create
/// and write from code the pass does not see: profile and coverage counters
/// (__llvm_gcov_ctr, __profc_...; most sit in sections of their own anyway),
/// sanitizers' state, and C++ guard variables of function-local statics (_ZGV,
/// written by __cxa_guard_release in libstdc++).
static constexpr StringLiteral RuntimeOwnedPrefixes[] = {
    "__llvm_", "__prof", "__asan", "__hwasan", "__msan", "__tsan",
    "__dfsan", "__sancov", "__ubsan", "_ZGV"};

/// Whether -midway-shared-globals shares GV, a global variable this module
/// defines. Each exclusion says why the variable is not the program's shared
/// data.
static bool isShareableByOption(const GlobalVariable &GV) {
  // Defined elsewhere: the module that defines it decides (and
  // available_externally is another module's definition, copied for inlining).
  if (GV.isDeclaration() || GV.hasAvailableExternallyLinkage())
    return false;
  // One copy per thread by definition; a rank's threads keep theirs.
  if (GV.isThreadLocal())
    return false;
  // Read-only data (constants, string literals, __func__, vtables) is the same
  // in every rank and never written.
  if (GV.isConstant())
    return false;
  // LLVM's own arrays (llvm.used, llvm.global_ctors), which the backend and
  // the linker consume.
  if (GV.getName().starts_with("llvm."))
    return false;
  // The program or an instrumentation chose another section (__attribute__((
  // section)), #pragma clang section with other names, profile counters in
  // __llvm_prf_cnts, sanitizer coverage in __sancov_*).
  if (GV.hasSection() || GV.hasImplicitSection())
    return false;
  for (StringRef Prefix : RuntimeOwnedPrefixes)
    if (GV.getName().starts_with(Prefix))
      return false;
  return true;
}

/// Puts GV, a shared definition, into its section. Zero-initialized data goes
/// to the NOBITS section through the "bss-section" attribute, which the backend
/// applies to data of kind BSS only (an explicit section would make it PROGBITS
/// zeros); "data-section" catches it if -fno-zero-initialized-in-bss makes it
/// data instead. Everything else gets the explicit section.
static bool place(GlobalVariable &GV) {
  if (isZeroInitialized(GV) && !GV.hasCommonLinkage()) {
    if (!GV.hasSection() &&
        getImplicitSection(GV, BssSectionAttr) == MW_SHARED_BSS_SECTION &&
        getImplicitSection(GV, DataSectionAttr) == MW_SHARED_SECTION)
      return false;
    GV.setSection("");
    GV.addAttribute(BssSectionAttr, MW_SHARED_BSS_SECTION);
    GV.addAttribute(DataSectionAttr, MW_SHARED_SECTION);
    ++NumSharedZeroInit;
    return true;
  }
  if (GV.getSection() == MW_SHARED_SECTION)
    return false;
  GV.setSection(MW_SHARED_SECTION);
  return true;
}

bool midway::placeSharedGlobals(Module &M) {
  bool Changed = false;
  for (GlobalVariable &GV : M.globals()) {
    if (ClSharedGlobals && !isInSharedSection(GV) && isShareableByOption(GV)) {
      // A common symbol (-fcommon) cannot have a section; mwcc compiles with
      // -fno-common, so this is a plain clang build.
      if (GV.hasCommonLinkage()) {
        warn(GV, "'" + GV.getName() +
                     "' is a common symbol, which cannot be shared; it stays "
                     "private to each rank: compile with -fno-common");
        continue;
      }
      GV.addAttribute(DataSectionAttr, MW_SHARED_SECTION);
      ++NumSharedByOption;
      Changed = true;
    }
    if (!GV.isDeclaration() && isInSharedSection(GV))
      Changed |= place(GV);
  }
  return Changed;
}
