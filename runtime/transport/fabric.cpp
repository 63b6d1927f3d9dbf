// The endpoint's objects, checked calls, registration, buffers (fabric.hpp).
#include "transport/fabric.hpp"

#include <cerrno>
#include <thread>
#include <sys/mman.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "core/error.hpp"
#include "transport/receive.hpp"

namespace mw::transport {

const char *g_provider_for_errors = "(none yet)";
Fabric &fab = *new Fabric;
Buffers &bufs = *new Buffers;

constinit thread_local int t_post_peer = -1;

namespace {
bool is_link_error(long ret) {
  switch (-ret) {
    case FI_ENETUNREACH: case FI_EHOSTUNREACH: case FI_ECONNRESET: case FI_ECONNREFUSED:
    case FI_ECONNABORTED: case FI_ETIMEDOUT: case FI_ENOTCONN: case EPIPE:
      return true;
    default:
      return false;
  }
}
}  // namespace

bool unreachable_retry(long ret) {
  if (t_post_peer < 0 || !is_link_error(ret) || fab.cfg.liveness_ms <= 0) return false;
  const long now = elapsed_ns(SteadyClock::time_point{});
  if (t_unreachable_since == 0) t_unreachable_since = now;
  if (now - t_unreachable_since > static_cast<long>(fab.cfg.liveness_ms) * 1'000'000L) return false;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return true;
}

void fi_fatal(const char *call, long ret, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (t_post_peer >= 0 && is_link_error(ret)) {
    char how[768];
    std::snprintf(how, sizeof how, "%s %s has failed for %.1f s: %s", call, what,
                  t_unreachable_since ? static_cast<double>(elapsed_ns(SteadyClock::time_point{}) - t_unreachable_since) / 1e9 : 0.0,
                  fi_strerror(static_cast<int>(-ret)));
    peer_unreachable(t_post_peer, how);
  }
  mw::fatal(call, "%s%son provider '%s': %s", what, what[0] ? " " : "", g_provider_for_errors,
            fi_strerror(static_cast<int>(-ret)));
}

void gather(std::span<const iovec> iov, size_t from, std::byte *dst, size_t len) {
  for (const iovec &v : iov) {
    if (len == 0) break;
    if (from >= v.iov_len) {
      from -= v.iov_len;
      continue;
    }
    size_t n = std::min(v.iov_len - from, len);
    std::memcpy(dst, static_cast<const std::byte *>(v.iov_base) + from, n);
    dst += n;
    len -= n;
    from = 0;
  }
}


void unlink_region_once_mapped() {
  if (fab.region_name.empty() || !fab.greeted_all.load(std::memory_order_acquire) ||
      fab.greetings.load(std::memory_order_acquire) < fab.cfg.rank)
    return;
  if (!fab.region_unlinked.exchange(true)) shm_unlink(fab.region_name.c_str());
}

fid_mr *reg(void *buf, size_t len, uint64_t access, const char *what) {
  fid_mr *mr = nullptr;
  uint64_t key = fab.mr_prov_key ? 0 : fab.next_key.fetch_add(1);
  MW_FI_CHECK(fi_mr_reg, (fab.domain, buf, len, access, 0, key, 0, &mr, nullptr),
              "registering %s (%zu bytes at %p)", what, len, buf);
  if (fab.mr_endpoint) {
    MW_FI_CHECK(fi_mr_bind, (mr, &fab.ep->fid, 0), "binding %s to the endpoint", what);
    MW_FI_CHECK(fi_mr_enable, (mr), "enabling %s", what);
  }
  return mr;
}

void unreg(fid_mr *mr, const char *what) {
  if (mr) MW_FI_CHECK(fi_close, (&mr->fid), "closing the registration of %s", what);
}

fi_info *make_hints(const std::string &prov, uint64_t caps, fi_threading threading) {
  fi_info *h = fi_allocinfo();
  if (!h) mw::fatal("fi_allocinfo", "out of memory");
  h->ep_attr->type = FI_EP_RDM;
  h->caps = caps;
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  h->domain_attr->threading = threading;
  h->tx_attr->msg_order = FI_ORDER_SAS;  // delivery in order per sender rests on this
  h->rx_attr->msg_order = FI_ORDER_SAS;
  h->fabric_attr->prov_name = strdup(prov.c_str());
  return h;
}

// Asks for the most the transport can use, then for less: RMA, then FI_SOURCE are optional.
fi_info *find_provider(const std::string &prov, bool want_rma) {
  const uint64_t rma = FI_RMA | FI_READ | FI_REMOTE_READ;
  std::vector<uint64_t> tries;
  if (want_rma) tries = {FI_MSG | rma | FI_SOURCE, FI_MSG | rma};
  tries.push_back(FI_MSG | FI_SOURCE);
  tries.push_back(FI_MSG);
  int last = 0;
  // Thread-safe endpoints first (application threads and the service thread call in
  // concurrently); else the transport serializes its calls itself (FabLock).
  for (uint64_t caps : tries) {
    for (fi_threading threading : {FI_THREAD_SAFE, FI_THREAD_DOMAIN}) {
      fi_info *hints = make_hints(prov, caps, threading);
      fi_info *info = nullptr;
      last = getinfo(hints, &info);
      fi_freeinfo(hints);
      if (last == 0) return info;
      if (last != -FI_ENODATA)
        fi_fatal("fi_getinfo", last, "asking for provider '%s'", prov.c_str());
    }
  }
  // Is there such a provider at all?
  fi_info *hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup(prov.c_str());
  fi_info *any = nullptr;
  int ret = getinfo(hints, &any);
  fi_freeinfo(hints);
  if (ret != 0)
    mw::fatal("fi_getinfo", "no provider '%s' on this host: %s", prov.c_str(), fi_strerror(-ret));
  fi_freeinfo(any);
  mw::fatal("fi_getinfo",
            "provider '%s' offers no reliable datagram endpoint (FI_EP_RDM) with messages sent "
            "in order (FI_ORDER_SAS): %s",
            prov.c_str(), fi_strerror(-last));
}

std::byte *alloc_slab(size_t len) {
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) mw::fatal_errno("mmap", "cannot allocate %zu bytes of message buffers", len);
  return static_cast<std::byte *>(p);
}

void open_buffers() {
  bufs.buf_len = sizeof(Header) + fab.cfg.eager_limit;
  size_t rx_n = std::min<size_t>(kRxBuffers, std::max<size_t>(fab.info->rx_attr->size, 1));
  size_t tx_n = std::min<size_t>(kSendBuffers, std::max<size_t>(fab.info->tx_attr->size, 1));
  bufs.rx_slab = alloc_slab(rx_n * bufs.buf_len);
  bufs.tx_slab = alloc_slab(tx_n * bufs.buf_len);
  if (fab.mr_local) {
    bufs.rx_mr = reg(bufs.rx_slab, rx_n * bufs.buf_len, FI_RECV, "the receive buffers");
    bufs.tx_mr = reg(bufs.tx_slab, tx_n * bufs.buf_len, FI_SEND, "the send buffers");
  }
  bufs.rx.resize(rx_n);
  bufs.rx_ring.assign(rx_n, nullptr);
  bufs.rx_posted = bufs.rx_next = 0;
  bufs.tx.resize(tx_n);
  for (size_t i = 0; i < tx_n; ++i) {
    bufs.tx[i].kind = OpKind::kSend;
    bufs.tx[i].buf = bufs.tx_slab + i * bufs.buf_len;
    bufs.tx_free.push_back(&bufs.tx[i]);
  }
  for (size_t i = 0; i < rx_n; ++i) {
    bufs.rx[i].kind = OpKind::kRecv;
    bufs.rx[i].peer = -1;
    bufs.rx[i].buf = bufs.rx_slab + i * bufs.buf_len;
    post_recv(&bufs.rx[i]);
  }
}

void unregister_buffers() {
  unreg(bufs.tx_mr, "the send buffers");
  unreg(bufs.rx_mr, "the receive buffers");
  bufs.tx_mr = bufs.rx_mr = nullptr;
}

void free_buffers() {
  munmap(bufs.rx_slab, bufs.rx.size() * bufs.buf_len);
  munmap(bufs.tx_slab, bufs.tx.size() * bufs.buf_len);
  bufs.rx.clear();
  bufs.rx_ring.clear();
  bufs.tx.clear();
  bufs.tx_free.clear();
}

}  // namespace mw::transport
