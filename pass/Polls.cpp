//===- Polls.cpp - Polls at loop back-edges -------------------------------===//
//
// Part of Midway, a distributed shared memory for C.
//
//===----------------------------------------------------------------------===//
//
// A rank that computes must still answer its peers (a lock request, a page
// fetch) within microseconds, not at the scheduler's next tick. As Shasta
// (Scales et al., ASPLOS'96) did, the pass puts polls on loop back-edges: one
// load of this rank's "messages wait" word, at the constant address
// MW_POLL_WORD (midway.h), and a branch, predicted not taken, to __mw_poll(),
// which serves them on the application thread.
//
// Where polls go (the rule, and why):
//   1. A loop that contains loops polls on each of its back-edges: once per run
//      of its inner loops, at no cost per inner iteration. In a matrix multiply
//      (i, j, k) that is once per k loop: 512 to 2048 multiply-adds, a fraction of
//      a microsecond to a microsecond or two.
//   2. An innermost loop that is not inside another loop of its function (a flat
//      sweep, or the loop of a function called from another's loop) polls every
//      -midway-poll-budget iterations, counted down in a register: nothing else
//      would poll while it runs. A loop whose trip count is known to be at most
//      the budget gets none: it is tiny and bounded, and whatever runs it polls.
//   3. An innermost loop inside another loop gets no poll: rule 1 polls after
//      each of its runs, and a poll in it would cost every iteration. An inner
//      loop that runs for long (millions of iterations inside an outer loop)
//      serves messages only at its exit; the runtime's service thread remains
//      the fallback there, as for code the pass does not see and long system
//      calls. Except a loop that scatters: one that stores through an address
//      that does not step with the loop (a histogram's count, a sort's
//      permutation: a[b[i]] = ...) gets rule 2's counted poll. Each of its
//      iterations is a random access and a mark at a random shadow byte, beside
//      which the count's decrement is lost; such loops run long over a rank's
//      share of the keys (RADIX), and a page request that meets one waited for
//      the service thread to get the core (docs/PERFORMANCE.md, "Polls in loops
//      that scatter"). Affine inner loops (a stencil, a dot product, LU's
//      daxpy) keep none: a count in every inner loop cost LU at one rank a
//      fifth of its time.
// Functions without loops get no poll; the runtime's functions (exempt from
// the pass) none either. -midway-polls=false turns them off (mwcc -fno-midway-polls).
//
// Polls are planned while the loops are as analysed (planPolls, during the
// pass's "choose" step) and inserted last (insertPolls), after the marks and
// checks have split blocks: a back-edge is remembered by its branch, which
// splitting moves but never replaces.
//
//===----------------------------------------------------------------------===//

#include "MidwayInstrument.h"

#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

using namespace llvm;
using namespace midway;

#define DEBUG_TYPE "midway-instrument"

static cl::opt<bool> ClPolls(
    "midway-polls",
    cl::desc("Poll for messages to this rank at loop back-edges (needs a "
             "runtime with __mw_poll; see midway.h)"),
    cl::init(true), cl::cat(MidwayCategory));

static cl::opt<unsigned> ClPollBudget(
    "midway-poll-budget",
    cl::desc("Iterations of an outermost innermost loop between two polls"),
    cl::init(1024), cl::cat(MidwayCategory));

ALWAYS_ENABLED_STATISTIC(NumPolls, "Number of polls at loop back-edges");
ALWAYS_ENABLED_STATISTIC(NumCountedPolls,
                         "Number of polls made every -midway-poll-budget iterations");

bool midway::arePollsEnabled() { return ClPolls; }

/// Rule 3's exception: a store of L through an address that neither stays put
/// nor steps by a constant as L iterates.
static bool scatters(Loop *L, ScalarEvolution &SE) {
  for (BasicBlock *BB : L->blocks())
    for (Instruction &I : *BB) {
      auto *St = dyn_cast<StoreInst>(&I);
      if (!St)
        continue;
      const SCEV *Addr = SE.getSCEV(St->getPointerOperand());
      if (SE.isLoopInvariant(Addr, L))
        continue;
      auto *Rec = dyn_cast<SCEVAddRecExpr>(Addr);
      if (!Rec || Rec->getLoop() != L || !Rec->isAffine())
        return true;
    }
  return false;
}

/// Rule 2's exception: a loop of at most Budget iterations.
static bool isTinyAndBounded(Loop *L, ScalarEvolution &SE) {
  unsigned MaxTrips = SE.getSmallConstantMaxTripCount(L); // 0: unknown
  return MaxTrips != 0 && MaxTrips <= ClPollBudget;
}

SmallVector<PlannedPoll, 4> midway::planPolls(LoopInfo &LI, ScalarEvolution &SE) {
  SmallVector<PlannedPoll, 4> Plan;
  for (Loop *L : LI.getLoopsInPreorder()) {
    bool Innermost = L->isInnermost();
    // Rule 3, and its exception.
    if (Innermost && L->getParentLoop() && !scatters(L, SE))
      continue;
    // Rule 2's exception.
    if (Innermost && isTinyAndBounded(L, SE))
      continue;
    PlannedPoll P{L->getHeader(), {}, /*Counted=*/Innermost};
    SmallVector<BasicBlock *, 2> Latches;
    L->getLoopLatches(Latches);
    for (BasicBlock *Latch : Latches)
      P.BackEdges.push_back(Latch->getTerminator());
    // A counter needs one back-edge to count on; a loop with several (rare in
    // optimized code) polls on each instead.
    if (P.BackEdges.size() != 1)
      P.Counted = false;
    if (!P.BackEdges.empty())
      Plan.push_back(std::move(P));
  }
  return Plan;
}

/// Emits the poll before Before: one load of the word at MW_POLL_WORD and a
/// call of __mw_poll if it is not zero, predicted not taken.
static void emitPoll(Instruction *Before) {
  Module &M = *Before->getModule();
  LLVMContext &Ctx = M.getContext();
  IRBuilder<> IRB(Before);
  IRB.SetCurrentDebugLocation(Before->getDebugLoc());
  MDNode *NoSanitize = MDNode::get(Ctx, {});
  // Atomic, so that no later pass hoists the load out of the loop: the word
  // changes under the loop's feet.
  LoadInst *Word = IRB.CreateAlignedLoad(
      IRB.getInt64Ty(),
      ConstantExpr::getIntToPtr(IRB.getInt64(MW_POLL_WORD), IRB.getPtrTy()),
      Align(8), "midway.poll.word");
  Word->setAtomic(AtomicOrdering::Monotonic);
  Word->setMetadata(LLVMContext::MD_nosanitize, NoSanitize);
  Instruction *Then = SplitBlockAndInsertIfThen(
      IRB.CreateIsNotNull(Word), Before, /*Unreachable=*/false,
      MDBuilder(Ctx).createUnlikelyBranchWeights());
  AttributeList Attrs = AttributeList()
                            .addFnAttribute(Ctx, Attribute::Cold)
                            .addFnAttribute(Ctx, Attribute::NoUnwind);
  FunctionCallee PollFn =
      M.getOrInsertFunction("__mw_poll", Attrs, IRB.getVoidTy());
  IRB.SetInsertPoint(Then);
  IRB.CreateCall(PollFn)->setMetadata(LLVMContext::MD_nosanitize, NoSanitize);
  ++NumPolls;
}

/// Rule 2: polls on the one back-edge every ClPollBudget iterations. A count
/// of iterations left, a phi in the header (a register), goes down on the
/// back-edge; where it reaches zero the poll runs and the count starts again.
/// The fast path is a decrement and a branch.
static void emitCountedPoll(BasicBlock *Header, Instruction *BackEdge) {
  IntegerType *I32 = Type::getInt32Ty(Header->getContext());
  Constant *Budget = ConstantInt::get(I32, ClPollBudget);
  PHINode *Left = PHINode::Create(I32, 2, "midway.poll.left");
  Left->insertBefore(Header->begin());
  IRBuilder<> IRB(BackEdge);
  IRB.SetCurrentDebugLocation(BackEdge->getDebugLoc());
  Value *Dec = IRB.CreateSub(Left, ConstantInt::get(I32, 1));
  Value *Expired = IRB.CreateICmpEQ(Dec, ConstantInt::get(I32, 0));
  BasicBlock *Counted = BackEdge->getParent();
  Instruction *Then = SplitBlockAndInsertIfThen(
      Expired, BackEdge, /*Unreachable=*/false,
      MDBuilder(Header->getContext()).createUnlikelyBranchWeights());
  emitPoll(Then);
  BasicBlock *Latch = BackEdge->getParent();
  PHINode *Next = PHINode::Create(I32, 2, "midway.poll.next");
  Next->insertBefore(Latch->begin());
  Next->addIncoming(Dec, Counted);
  Next->addIncoming(Budget, Then->getParent());
  // Every edge into the header but the back-edge starts the count.
  for (BasicBlock *Pred : predecessors(Header))
    Left->addIncoming(Pred == Latch ? static_cast<Value *>(Next) : Budget, Pred);
  ++NumCountedPolls;
}

bool midway::insertPolls(ArrayRef<PlannedPoll> Plan) {
  for (const PlannedPoll &P : Plan) {
    if (P.Counted) {
      emitCountedPoll(P.Header, P.BackEdges.front());
      continue;
    }
    for (Instruction *BackEdge : P.BackEdges)
      emitPoll(BackEdge);
  }
  return !Plan.empty();
}
