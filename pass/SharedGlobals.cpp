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
#include "llvm/Transforms/Utils/ModuleUtils.h"

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

//===----------------------------------------------------------------------===//
// Descriptors: the shape of each shared global, for names in messages
//===----------------------------------------------------------------------===//
//
// The runtime's errors and mwrun's tables name shared data by address; the
// symbol table turns an address into `cells+12`, but only the type says that
// is `cells[3]`. The element sizes come from the IR types the pass sees here,
// recorded per shared global in section MW_OBJECTS_SECTION, rather than from
// DWARF: a default build carries line tables only (-gline-tables-only, which
// has no types), and asking for full -g in every build would grow every object
// file and slow every compile to name a few variables in error messages, while
// a descriptor costs 72 bytes of read-only data per shared global and no code.
// IR types have no field names, so a field is printed as its offset (`s+8`).

StructType *midway::getObjectType(LLVMContext &Ctx) {
  Type *Ptr = PointerType::getUnqual(Ctx), *I32 = Type::getInt32Ty(Ctx),
       *I64 = Type::getInt64Ty(Ctx);
  return StructType::get(Ctx, {Ptr, Ptr, I64, I64, I32, I32,
                               ArrayType::get(I64, MW_OBJECT_MAX_DIMS)});
}

/// The element type of Ty if it is the literal struct clang makes of an array
/// initialized in part (`int a[16] = {1, 2}` is `<{ i32, i32, [14 x i32] }>`):
/// members that are all T or arrays of T. Null otherwise.
static Type *getFlattenedElement(Type *Ty, uint64_t &Count) {
  auto *STy = dyn_cast<StructType>(Ty);
  if (!STy || !STy->isLiteral() || STy->getNumElements() == 0)
    return nullptr;
  Type *Element = nullptr;
  Count = 0;
  for (Type *Member : STy->elements()) {
    uint64_t N = 1;
    if (auto *ATy = dyn_cast<ArrayType>(Member)) {
      N = ATy->getNumElements();
      Member = ATy->getElementType();
    }
    if (Member->isAggregateType() || (Element && Member != Element))
      return nullptr;
    Element = Member;
    Count += N;
  }
  return Element;
}

GlobalVariable *midway::createObjectDescriptor(Module &M,
                                               const GlobalVariable &GV,
                                               Constant *Name) {
  LLVMContext &Ctx = M.getContext();
  const DataLayout &DL = M.getDataLayout();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  Type *Ty = GV.getValueType();
  SmallVector<Constant *, MW_OBJECT_MAX_DIMS> Dims;
  while (auto *ATy = dyn_cast<ArrayType>(Ty)) {
    if (Dims.size() == MW_OBJECT_MAX_DIMS)
      break;
    Dims.push_back(ConstantInt::get(I64, ATy->getNumElements()));
    Ty = ATy->getElementType();
  }
  uint64_t Count;
  if (Dims.empty())
    if (Type *Element = getFlattenedElement(Ty, Count)) {
      Dims.push_back(ConstantInt::get(I64, Count));
      Ty = Element;
    }
  unsigned Rank = Dims.size();
  Dims.resize(MW_OBJECT_MAX_DIMS, ConstantInt::get(I64, 0));
  uint64_t Size = Ty->isSized() ? DL.getTypeAllocSize(GV.getValueType()) : 0;
  uint64_t ElementSize = Ty->isSized() ? DL.getTypeAllocSize(Ty) : 0;
  StructType *ObjectTy = getObjectType(Ctx);
  auto *Desc = new GlobalVariable(
      M, ObjectTy, /*isConstant=*/true, GlobalValue::PrivateLinkage,
      ConstantStruct::get(
          ObjectTy,
          {Name, const_cast<GlobalVariable *>(&GV), ConstantInt::get(I64, Size),
           ConstantInt::get(I64, ElementSize), ConstantInt::get(I32, Rank),
           ConstantInt::get(I32, 0),
           ConstantArray::get(ArrayType::get(I64, MW_OBJECT_MAX_DIMS), Dims)}),
      "midway.object");
  Desc->setAlignment(Align(8));
  return Desc;
}

DenseMap<const GlobalVariable *, GlobalVariable *>
midway::describeSharedGlobals(Module &M) {
  DenseMap<const GlobalVariable *, GlobalVariable *> Described;
  SmallVector<GlobalVariable *, 16> Shared;
  for (GlobalVariable &GV : M.globals())
    // (midway.h's own anchor is no program variable.)
    if (!GV.isDeclaration() && isInSharedSection(GV) &&
        !GV.getName().starts_with("__mw_"))
      Shared.push_back(&GV);
  SmallVector<GlobalValue *, 16> Used;
  for (GlobalVariable *GVP : Shared) {
    GlobalVariable &GV = *GVP;
    StringRef Text = GV.getName();
    Constant *Data = ConstantDataArray::getString(M.getContext(), Text);
    auto *Name = new GlobalVariable(M, Data->getType(), /*isConstant=*/true,
                                    GlobalValue::PrivateLinkage, Data,
                                    "midway.name");
    Name->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
    Name->setAlignment(Align(1));
    GlobalVariable *Desc = createObjectDescriptor(M, GV, Name);
    // An array of descriptors: 72 bytes each, aligned to 8, never padded apart.
    Desc->setSection(MW_OBJECTS_SECTION);
    Described[&GV] = Desc;
    Used.push_back(Desc);
  }
  if (!Used.empty())
    appendToCompilerUsed(M, Used);
  return Described;
}
