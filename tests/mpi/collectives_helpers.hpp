// Shared by the collectives suite (test_device_collectives.cpp, device_collectives_reduce.cpp): the
// members of a team, and a guarded symmetric buffer checked against an expected image. The suite
// runs on the world and on the strided Halves (halves.hpp).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "device_harness.hpp"
#include "halves.hpp"

namespace mori::test {

// The world PE of each member of `team`, in team order.
inline std::vector<int> members_of(shmem::Team team) {
  std::vector<int> pes(shmem::team_n_pes(team));
  for (int i = 0; i < static_cast<int>(pes.size()); ++i)
    pes[i] = shmem::team_translate_pe(team, i, shmem::kTeamWorld);
  return pes;
}

// A symmetric slot per case, poisoned before each run, whose every byte (guards included) is checked
// against what the case must leave: the expected elements, and the poison everywhere else.
template <typename T>
class CheckedSlots {
 public:
  CheckedSlots(size_t slots, size_t elems) : slots_(slots, elems), images_(slots) { reset(); }
  T* slot(size_t s) const { return slots_.slot(s); }
  void reset() {
    slots_.poison();
    for (auto& image : images_) {
      image.assign(slots_.elems() * sizeof(T), GuardedSlots<T>::kPoison);
    }
  }
  // The case of slot s must leave `value` at element i.
  void expect(size_t s, size_t i, T value) {
    std::memcpy(images_[s].data() + i * sizeof(T), &value, sizeof(T));
  }
  // "" when every slot matches its image and every guard is intact; else the first difference.
  std::string check() const {
    for (size_t s = 0; s < images_.size(); ++s) {
      const auto* got = reinterpret_cast<const unsigned char*>(slot(s));
      for (size_t b = 0; b < images_[s].size(); ++b)
        if (got[b] != images_[s][b])
          return "slot " + std::to_string(s) + ": element " + std::to_string(b / sizeof(T)) +
                 " differs at byte " + std::to_string(b % sizeof(T));
    }
    return slots_.check_guards(std::vector<size_t>(images_.size(), slots_.elems()));
  }

 private:
  GuardedSlots<T> slots_;
  std::vector<std::vector<unsigned char>> images_;
};

}  // namespace mori::test
