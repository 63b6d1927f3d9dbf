// A rendezvous bulk's gather list, joined where pieces touch (transport/fabric.hpp,
// append_merged): a read-ahead's consecutive pages go as one registered piece and one
// read, and no byte moves to another place in the list.
#include <gtest/gtest.h>
#include <sys/uio.h>

#include <cstddef>
#include <vector>

#include "transport/fabric.hpp"

namespace mw::transport {
namespace {

TEST(GatherList, PiecesThatTouchAreJoinedAndTheOthersKept) {
  std::byte buf[64];
  const iovec in[] = {{buf, 8}, {buf + 8, 8}, {buf + 16, 0}, {buf + 24, 8}, {buf + 32, 16}, {buf, 4}};
  std::vector<iovec> out;
  append_merged(out, in);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].iov_base, buf);
  EXPECT_EQ(out[0].iov_len, 16u);  // two pieces that touch
  EXPECT_EQ(out[1].iov_base, buf + 24);
  EXPECT_EQ(out[1].iov_len, 24u);  // the empty piece skipped, the gap kept
  EXPECT_EQ(out[2].iov_base, buf);  // a piece before the last one's start stays apart
  EXPECT_EQ(out[2].iov_len, 4u);
  EXPECT_EQ(total_len(out), total_len(in));
}

TEST(GatherList, AppendsToWhatIsThereAndJoinsAcrossTheTwo) {
  std::byte buf[32];
  std::vector<iovec> out{{buf, 8}};
  const iovec more[] = {{buf + 8, 8}};
  append_merged(out, more);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].iov_len, 16u);
}

}  // namespace
}  // namespace mw::transport
