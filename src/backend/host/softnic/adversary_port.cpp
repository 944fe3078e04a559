// The software NIC's side of its adversarial mode: the steps of the plain NIC that the Adversary
// (adversary.hpp) schedules, on the NIC's queues and memory.
#include <atomic>
#include <string>

#include "backend/host/softnic/softnic.hpp"

namespace mori::softnic {

using provider::WorkRequest;

AdversaryStats SoftNic::adversary_stats() const {
  return adversary_ ? adversary_->stats() : AdversaryStats{};
}

uint64_t SoftNic::AdversaryPort::doorbell(size_t qp, uint64_t seen) {
  return nic_.codec_.announced(*nic_.queues_[qp].served.ep, seen);
}

CompletionStatus SoftNic::AdversaryPort::decode(size_t qp, uint64_t index, WorkRequest* wr,
                                                std::string* why) {
  return nic_.decode_checked(nic_.queues_[qp], index, wr, why);
}

// The plain NIC's begin(): an atomic's old value and a write's or read's bytes then move when the
// adversary says (land, place).
CompletionStatus SoftNic::AdversaryPort::execute(size_t qp, const WorkRequest& wr, uint64_t* old,
                                                 RemoteSpan* remote, std::string* why) {
  const CompletionStatus status = nic_.begin(nic_.queues_[qp], wr, old, remote, why);
  if (status == CompletionStatus::kSuccess) nic_.executed_.fetch_add(1, std::memory_order_relaxed);
  return status;
}

bool SoftNic::AdversaryPort::place(const RemoteSpan& remote, void* local, uint64_t bytes,
                                   bool to_remote, std::string* why) {
  return nic_.copy_remote(remote, local, bytes, to_remote, why);
}

void SoftNic::AdversaryPort::land(const WorkRequest& wr, uint64_t old) {
  nic_.land_atomic_result(wr, old);
}

void SoftNic::AdversaryPort::complete(size_t qp, const WorkRequest& wr, CompletionStatus status,
                                      const std::string& why) {
  Queue& q = nic_.queues_[qp];
  if (status != CompletionStatus::kSuccess)
    nic_.fail_queue(q, wr.index, wr, status, why);
  else
    nic_.complete_success(q, wr.index, wr);
}

}  // namespace mori::softnic
