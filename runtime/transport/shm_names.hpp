// What this job keeps in /dev/shm, named in one place: the transport makes and removes
// these files, and mwrun removes what a killed rank left behind.
//
//   /midway-<secret>-bells   the job's doorbell page (transport/wake.cpp); unlinked by
//                            connect() once every rank has mapped it
//   <pid>:<ep>:<domain>      libfabric shm's region of process <pid>'s endpoint, 16 MiB,
//                            removed by the provider only when the endpoint is closed
//
// Header-only: mwrun uses it without linking the transport.
#pragma once

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace mw::transport::shm_names {

// The shm_open name of a job's doorbell page.
inline std::string bells(uint64_t job_secret) {
  char name[64];
  std::snprintf(name, sizeof name, "/midway-%016llx-bells", static_cast<unsigned long long>(job_secret));
  return name;
}

// Removes libfabric shm's regions of process `pid`. Safe only once no process uses them:
// `pid` has exited (mwrun, after reaping a rank), or it is the caller itself before its
// endpoint exists (a region named after our pid is then a dead process's whose pid we
// were given, and shm's fi_enable would fail with EBUSY on it). If libfabric names its
// regions otherwise, nothing matches and nothing is removed.
inline void remove_regions_of(pid_t pid) {
  const std::string prefix = std::to_string(pid) + ":";
  DIR *d = opendir("/dev/shm");
  if (!d) return;
  while (dirent *e = readdir(d))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
}

}  // namespace mw::transport::shm_names
