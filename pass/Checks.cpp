//===- Checks.cpp - The check build: a runtime check before every access --===//
//
// Part of Midway, a distributed shared memory for C.
//
//===----------------------------------------------------------------------===//
//
// A check build (-midway-check, mwcc -fmidway-check) lets the runtime test every
// access to shared data against the rules of entry consistency (a store to
// lock-bound data without the lock held exclusively, a load without it held at
// all, ...), as ThreadSanitizer tests accesses for races. The pass emits, before
// each access that may reach shared data:
//
//     if (mw_in_window(p))                  inline; omitted for shared globals
//       __mw_check_store(p, size, &site);   or __mw_check_load
//
// so that private memory pays a compare and a branch. The site is a constant
// descriptor (midway.h: struct mw_site) of the access: its source location with
// the inlined-at chain, its size and kind, and the global it falls in when the
// pass can tell, so that a report can say "store of 4 bytes to A[3][17] at
// mm.c:42:7, inlined into main at mm.c:80:3". Sites go to section
// MW_SITES_SECTION, which the runtime can enumerate.
//
// Which accesses need a check is decided by the pass's omission rules, the same
// as for marks (MidwayInstrument.cpp): what is provably private is not checked.
// Nothing here runs unless -midway-check is given: a default build is untouched.
//
//===----------------------------------------------------------------------===//

#include "MidwayInstrument.h"

#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

using namespace llvm;
using namespace midway;

#define DEBUG_TYPE "midway-instrument"

static cl::opt<bool> ClCheck(
    "midway-check",
    cl::desc("Check build (mwcc -fmidway-check): also call the runtime before "
             "every load and store that may reach shared data, with a "
             "descriptor of its source location, so that it can report "
             "accesses that break entry consistency"),
    cl::init(false), cl::cat(MidwayCategory));

ALWAYS_ENABLED_STATISTIC(NumCheckedLoads, "Number of loads checked (check build)");
ALWAYS_ENABLED_STATISTIC(NumCheckedStores,
                         "Number of stores checked (check build)");
ALWAYS_ENABLED_STATISTIC(NumSites, "Number of access sites described (check build)");

bool midway::isCheckBuild() { return ClCheck; }

CheckInstrumenter::CheckInstrumenter(
    Module &M, DenseMap<const GlobalVariable *, GlobalVariable *> Objects)
    : M(M), Ctx(M.getContext()), DL(M.getDataLayout()),
      IntptrTy(DL.getIntPtrType(Ctx)), PtrTy(PointerType::getUnqual(Ctx)),
      Objects(std::move(Objects)) {
  Type *I8 = Type::getInt8Ty(Ctx), *I32 = Type::getInt32Ty(Ctx);
  // midway.h's structs, field by field.
  LocationTy = StructType::create(Ctx, {PtrTy, PtrTy, I32, I32, PtrTy},
                                  "struct.mw_location");
  ObjectTy = getObjectType(Ctx);
  SiteTy = StructType::create(
      Ctx, {LocationTy, PtrTy, I32, I8, ArrayType::get(I8, 3)}, "struct.mw_site");
  // The header asserts these sizes for the C compiler; this holds the pass to them.
  if (DL.getTypeAllocSize(LocationTy) != sizeof(mw_location) ||
      DL.getTypeAllocSize(ObjectTy) != sizeof(mw_object) ||
      DL.getTypeAllocSize(SiteTy) != sizeof(mw_site))
    report_fatal_error("midway: the check descriptors do not match midway.h");
  AttributeList Attrs = AttributeList().addFnAttribute(Ctx, Attribute::NoUnwind);
  Type *Void = Type::getVoidTy(Ctx);
  CheckLoadFn = M.getOrInsertFunction("__mw_check_load", Attrs, Void, PtrTy,
                                      IntptrTy, PtrTy);
  CheckStoreFn = M.getOrInsertFunction("__mw_check_store", Attrs, Void, PtrTy,
                                       IntptrTy, PtrTy);
}

/// A NUL-terminated string constant, one per text per module.
Constant *CheckInstrumenter::getString(StringRef S) {
  Constant *&GV = Strings[S];
  if (!GV) {
    auto *Str = new GlobalVariable(
        M, ArrayType::get(Type::getInt8Ty(Ctx), S.size() + 1), /*isConstant=*/true,
        GlobalValue::PrivateLinkage, ConstantDataArray::getString(Ctx, S),
        "midway.str");
    Str->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
    Str->setAlignment(Align(1));
    GV = Str;
  }
  return GV;
}

/// The name of the function a frame's code is in, as the source spells it.
static std::string getFunctionName(const DILocation *Loc, const Function &F) {
  if (Loc)
    if (const DISubprogram *SP = Loc->getScope()->getSubprogram()) {
      if (!SP->getName().empty())
        return SP->getName().str();
      if (!SP->getLinkageName().empty())
        return demangle(SP->getLinkageName());
    }
  return demangle(F.getName());
}

/// The location of one frame as a struct mw_location, with its inlined-at
/// chain; F is the function the instruction is in (all that is known without
/// debug information).
Constant *CheckInstrumenter::getLocation(const DILocation *Loc, const Function &F) {
  Type *I32 = Type::getInt32Ty(Ctx);
  Constant *InlinedAt = ConstantPointerNull::get(PtrTy);
  if (Loc && Loc->getInlinedAt()) {
    const DILocation *Caller = Loc->getInlinedAt();
    Constant *&Frame = Locations[{Caller, &F}];
    if (!Frame) {
      auto *GV = new GlobalVariable(M, LocationTy, /*isConstant=*/true,
                                    GlobalValue::PrivateLinkage,
                                    getLocation(Caller, F), "midway.inlined_at");
      GV->setAlignment(Align(8));
      Frame = GV;
    }
    InlinedAt = Frame;
  }
  Constant *File = Loc && !Loc->getFilename().empty()
                       ? getString(Loc->getFilename())
                       : ConstantPointerNull::get(PtrTy);
  return ConstantStruct::get(
      LocationTy, {File, getString(getFunctionName(Loc, F)),
                   ConstantInt::get(I32, Loc ? Loc->getLine() : 0),
                   ConstantInt::get(I32, Loc ? Loc->getColumn() : 0), InlinedAt});
}

/// GV's descriptor: the one describeSharedGlobals made for a definition, or a
/// new one for a variable another module defines.
Constant *CheckInstrumenter::getObject(const GlobalVariable *GV) {
  GlobalVariable *&Obj = Objects[GV];
  if (!Obj)
    Obj = createObjectDescriptor(M, *GV, getString(demangle(GV->getName())));
  return Obj;
}

/// The site of an access by I, one per location, size, kind and object.
Constant *CheckInstrumenter::getSite(const Instruction &I, uint64_t Size,
                                     unsigned Access,
                                     const GlobalVariable *Object) {
  const DILocation *Loc = I.getDebugLoc().get();
  const Function *F = I.getFunction();
  Constant *&Site = Sites[{Loc, Loc ? nullptr : F, Size, Access, Object}];
  if (Site)
    return Site;
  Type *I8 = Type::getInt8Ty(Ctx);
  auto *GV = new GlobalVariable(
      M, SiteTy, /*isConstant=*/true, GlobalValue::PrivateLinkage,
      ConstantStruct::get(
          SiteTy,
          {getLocation(Loc, *F),
           Object ? getObject(Object) : ConstantPointerNull::get(PtrTy),
           ConstantInt::get(Type::getInt32Ty(Ctx), Size),
           ConstantInt::get(I8, Access),
           ConstantAggregateZero::get(ArrayType::get(I8, 3))}),
      "midway.site");
  // An array of sites: aligned to 8, 48 bytes each, so never padded apart.
  GV->setSection(MW_SITES_SECTION);
  GV->setAlignment(Align(8));
  ++NumSites;
  return Site = GV;
}

/// The global variable an address lies in, if the pass can tell.
static const GlobalVariable *getObjectOf(const Value *Addr) {
  return dyn_cast<GlobalVariable>(getUnderlyingObject(Addr));
}

void CheckInstrumenter::check(Instruction *Before, const Instruction &I,
                              Value *Addr, Value *Size, unsigned Access,
                              Region R) {
  IRBuilder<> IRB(Before);
  IRB.SetCurrentDebugLocation(I.getDebugLoc());
  if (R == Region::Unknown)
    IRB.SetInsertPoint(SplitBlockAndInsertIfThen(
        inWindow(IRB, Addr, IntptrTy), Before, /*Unreachable=*/false));
  bool IsStore = Access & MW_ACCESS_STORE;
  auto *ConstSize = dyn_cast<ConstantInt>(Size);
  Constant *Site = getSite(I, ConstSize && !(Access & MW_ACCESS_RANGE)
                                  ? ConstSize->getZExtValue()
                                  : 0,
                           Access, getObjectOf(Addr));
  IRB.CreateCall(IsStore ? CheckStoreFn : CheckLoadFn,
                 {Addr, IRB.CreateZExtOrTrunc(Size, IntptrTy), Site})
      ->setMetadata(LLVMContext::MD_nosanitize, MDNode::get(Ctx, {}));
  ++(IsStore ? NumCheckedStores : NumCheckedLoads);
}

void CheckInstrumenter::checkLanes(Instruction *Before, const Instruction &I,
                                   Value *Addrs, uint64_t LaneSize,
                                   unsigned NumLanes, Value *Mask,
                                   unsigned Access, Region R) {
  const GlobalVariable *Object = getObjectOf(Addrs);
  Constant *Site = getSite(I, LaneSize, Access, Object);
  bool IsStore = Access & MW_ACCESS_STORE;
  for (unsigned Lane = 0; Lane != NumLanes; ++Lane) {
    IRBuilder<> IRB(Before);
    IRB.SetCurrentDebugLocation(I.getDebugLoc());
    Value *Addr = Addrs->getType()->isVectorTy()
                      ? IRB.CreateExtractElement(Addrs, Lane)
                      : IRB.CreateConstGEP1_64(IRB.getInt8Ty(), Addrs,
                                               Lane * LaneSize);
    // A lane the mask disables is not accessed, and may lie outside the
    // object, the window or the address space.
    Value *Cond = IRB.CreateExtractElement(Mask, Lane);
    if (R == Region::Unknown)
      Cond = IRB.CreateAnd(Cond, inWindow(IRB, Addr, IntptrTy));
    IRB.SetInsertPoint(SplitBlockAndInsertIfThen(Cond, Before, /*Unreachable=*/false));
    IRB.CreateCall(IsStore ? CheckStoreFn : CheckLoadFn,
                   {Addr, ConstantInt::get(IntptrTy, LaneSize), Site})
        ->setMetadata(LLVMContext::MD_nosanitize, MDNode::get(Ctx, {}));
  }
  ++(IsStore ? NumCheckedStores : NumCheckedLoads);
}
