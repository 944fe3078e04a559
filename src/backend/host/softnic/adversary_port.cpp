// The software NIC's side of its adversarial mode: the steps of the plain NIC that the Adversary
// (adversary.hpp) schedules, on the NIC's queues and memory.
#include <atomic>
#include <string>

#include "backend/host/softnic/softnic.hpp"

namespace mori::softnic {

using provider::Opcode;
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

// execute() of the plain NIC but for the data: an atomic's old value and a write's or read's bytes
// move when the adversary says (land, place).
CompletionStatus SoftNic::AdversaryPort::execute(size_t qp, const WorkRequest& wr, uint64_t* old,
                                                 RemoteSpan* remote, std::string* why) {
  const Queue& q = nic_.queues_[qp];
  CompletionStatus status;
  if (wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap)
    status = nic_.remote_atomic_op(q, wr, old, why);
  else if (wr.opcode == Opcode::kWrite || wr.opcode == Opcode::kRead ||
           wr.opcode == Opcode::kWriteInline)
    status = nic_.check_rdma(q, wr, remote, why);
  else
    status = refuse_opcode(wr, why);
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
  else if (wr.signaled && wr.index != nic_.options_.faults.drop_at)
    nic_.codec_.complete(*q.served.ep, &q.cq_produced, wr.index, wr, status);
}

}  // namespace mori::softnic
