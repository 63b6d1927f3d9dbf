//===- MidwayInstrument.h - What the pass's files share ---------*- C++ -*-===//
//
// Part of Midway, a distributed shared memory for C.
//
//===----------------------------------------------------------------------===//
//
// The midway-instrument pass is one pipeline (MidwayInstrument.cpp) with three
// helpers along clear seams:
//   * SharedGlobals.cpp: which global variables live in the shared window, and
//     putting them there (MW_SHARED, #pragma clang section, -midway-shared-globals,
//     zero-initialized data in a NOBITS section);
//   * Checks.cpp: the check build (-midway-check), a runtime check before every
//     access to possibly-shared memory, with a descriptor of its source site;
//   * Polls.cpp: polls at loop back-edges (-midway-polls), so that a computing
//     rank serves its peers' messages.
//
//===----------------------------------------------------------------------===//

#ifndef MIDWAY_PASS_MIDWAYINSTRUMENT_H
#define MIDWAY_PASS_MIDWAYINSTRUMENT_H

#include "midway.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"

#include <tuple>

namespace llvm {
class DILocation;
class LoopInfo;
class ScalarEvolution;
} // namespace llvm

namespace midway {

/// The category of the pass's options, so that `-mllvm --help` lists them
/// together under "Midway options".
extern llvm::cl::OptionCategory MidwayCategory;

/// Where the memory behind a pointer can be: provably outside the window (no
/// mark, no check), in a shared global (no window check needed), or unknown
/// (a window check first).
enum class Region { Private, Shared, Unknown };

/// (uintptr_t)p - MW_WINDOW_BASE < MW_WINDOW_SIZE, as midway.h's mw_in_window:
/// one subtract and one unsigned compare. Addr is a pointer, or lane addresses.
llvm::Value *inWindow(llvm::IRBuilder<> &IRB, llvm::Value *Addr,
                      llvm::IntegerType *IntptrTy);

/// Reports a Midway warning, "file:line:col: midway: <What>" (or "midway: in
/// function 'f': <What>" without debug information), as clang's
/// -Wbackend-plugin.
void warn(const llvm::Instruction &I, const llvm::Twine &What);
void warn(const llvm::GlobalValue &GV, const llvm::Twine &What);

//===----------------------------------------------------------------------===//
// SharedGlobals.cpp
//===----------------------------------------------------------------------===//

/// Whether global variable GV is linked into the shared window: the one answer
/// to "is this global shared" that every part of the pass uses. True for an
/// explicit section MW_SHARED_SECTION or MW_SHARED_BSS_SECTION (MW_SHARED), and
/// for a definition that `#pragma clang section` puts there (clang records the
/// pragma as "data-section"/"bss-section" attributes, not as a section).
bool isInSharedSection(const llvm::GlobalVariable &GV);

/// Puts the module's shared global variables into the window's sections, in the
/// one form the backend and mwcc's link layout agree on, before anything is
/// instrumented: zero-initialized data into the NOBITS MW_SHARED_BSS_SECTION,
/// the rest into MW_SHARED_SECTION. With -midway-shared-globals, every global
/// and static variable the module defines that can be shared joins them first.
/// Returns whether it changed the module.
bool placeSharedGlobals(llvm::Module &M);

/// midway.h's struct mw_object, as a literal IR struct.
llvm::StructType *getObjectType(llvm::LLVMContext &Ctx);

/// A new private constant struct mw_object describing GV: its name (the
/// constant string Name), address, size and array shape.
llvm::GlobalVariable *createObjectDescriptor(llvm::Module &M,
                                             const llvm::GlobalVariable &GV,
                                             llvm::Constant *Name);

/// Describes every shared global the module defines, in every build, with a
/// struct mw_object in section MW_OBJECTS_SECTION, so that the runtime and mwrun
/// name shared data as the source writes it (`cells[3]`, `locks[1]`). Returns
/// the descriptors by variable, for the check build's sites to share.
llvm::DenseMap<const llvm::GlobalVariable *, llvm::GlobalVariable *>
describeSharedGlobals(llvm::Module &M);

//===----------------------------------------------------------------------===//
// Checks.cpp
//===----------------------------------------------------------------------===//

/// Whether this is a check build (-midway-check).
bool isCheckBuild();

/// The check build's module-wide state: the descriptors of midway.h's check
/// ABI (struct mw_site, mw_location, mw_object), each made once per module, and
/// the runtime's check entry points.
class CheckInstrumenter {
public:
  /// Objects: the descriptors describeSharedGlobals made, reused by sites.
  CheckInstrumenter(
      llvm::Module &M,
      llvm::DenseMap<const llvm::GlobalVariable *, llvm::GlobalVariable *> Objects);

  /// Checks the access of Size bytes (an integer, constant or not) at Addr made
  /// by instruction I, right before Before. Access is a set of MW_ACCESS_* bits;
  /// a store is checked with __mw_check_store, anything else with
  /// __mw_check_load. Region::Unknown puts the call behind the inline window
  /// check; Region::Shared calls unconditionally.
  void check(llvm::Instruction *Before, const llvm::Instruction &I,
             llvm::Value *Addr, llvm::Value *Size, unsigned Access, Region R);

  /// As check, for each lane of a vector access that Mask (a vector of i1)
  /// enables: lanes at Addrs (a vector of pointers), or, if Addrs is a pointer,
  /// contiguous lanes of LaneSize bytes from it.
  void checkLanes(llvm::Instruction *Before, const llvm::Instruction &I,
                  llvm::Value *Addrs, uint64_t LaneSize, unsigned NumLanes,
                  llvm::Value *Mask, unsigned Access, Region R);

private:
  llvm::Constant *getSite(const llvm::Instruction &I, uint64_t Size,
                          unsigned Access, const llvm::GlobalVariable *Object);
  llvm::Constant *getLocation(const llvm::DILocation *Loc,
                              const llvm::Function &F);
  llvm::Constant *getObject(const llvm::GlobalVariable *GV);
  llvm::Constant *getString(llvm::StringRef S);

  llvm::Module &M;
  llvm::LLVMContext &Ctx;
  const llvm::DataLayout &DL;
  llvm::IntegerType *IntptrTy;
  llvm::PointerType *PtrTy;
  llvm::StructType *LocationTy, *ObjectTy, *SiteTy;
  llvm::FunctionCallee CheckLoadFn, CheckStoreFn;
  using SiteKey = std::tuple<const llvm::DILocation *, const llvm::Function *,
                             uint64_t, unsigned, const llvm::GlobalVariable *>;
  llvm::DenseMap<SiteKey, llvm::Constant *> Sites;
  llvm::DenseMap<std::pair<const llvm::DILocation *, const llvm::Function *>,
                 llvm::Constant *>
      Locations;
  llvm::DenseMap<const llvm::GlobalVariable *, llvm::GlobalVariable *> Objects;
  llvm::StringMap<llvm::Constant *> Strings;
};

//===----------------------------------------------------------------------===//
// Polls.cpp
//===----------------------------------------------------------------------===//

/// Whether polls are on (-midway-polls).
bool arePollsEnabled();

/// A loop that gets a poll: on each back-edge (the branch of a latch), or, if
/// Counted, every -midway-poll-budget iterations on its one back-edge.
struct PlannedPoll {
  llvm::BasicBlock *Header;
  llvm::SmallVector<llvm::Instruction *, 2> BackEdges;
  bool Counted;
};

/// Chooses the loops of a function that get a poll (Polls.cpp states the
/// rule), while LoopInfo still describes the function.
llvm::SmallVector<PlannedPoll, 4> planPolls(llvm::LoopInfo &LI,
                                            llvm::ScalarEvolution &SE);

/// Inserts the planned polls; runs last, after marks and checks split blocks.
/// Returns whether it changed the function.
bool insertPolls(llvm::ArrayRef<PlannedPoll> Plan);

} // namespace midway

#endif // MIDWAY_PASS_MIDWAYINSTRUMENT_H
