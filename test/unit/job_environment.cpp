// Every unit test runs inside one single-process job: mw_init once, before any test.
#include <gtest/gtest.h>

#include "midway.h"

namespace {

class JobEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_EQ(mw_init(nullptr, nullptr), 0); }
};

const auto *const kJob = ::testing::AddGlobalTestEnvironment(new JobEnvironment);

}  // namespace
