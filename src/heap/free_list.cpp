// A treap keyed by hole offset. Priorities are a hash of the offset rather than random numbers, so
// the tree's shape, like everything else in the allocator, is the same on every PE and in every
// run; the hash still spreads offsets well enough to keep the expected depth logarithmic.
#include "heap/free_list.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace mori::heap {

struct FreeList::Node {
  size_t offset;
  size_t size;
  size_t max_size;  // the largest `size` in this subtree: what first fit prunes on
  uint64_t priority;
  std::unique_ptr<Node> left, right;
};

namespace {

using Node = FreeList::Node;
using NodePtr = std::unique_ptr<Node>;

// splitmix64's finaliser: a bijection, so distinct offsets get distinct priorities.
uint64_t priority_of(size_t offset) {
  uint64_t z = static_cast<uint64_t>(offset) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

size_t max_of(const NodePtr& n) { return n ? n->max_size : 0; }

void update(Node* n) { n->max_size = std::max({n->size, max_of(n->left), max_of(n->right)}); }

// Splits `t` into the holes below `offset` (*lo) and those at or above it (*hi).
void split(NodePtr t, size_t offset, NodePtr* lo, NodePtr* hi) {
  if (!t) {
    lo->reset();
    hi->reset();
    return;
  }
  if (t->offset < offset) {
    split(std::move(t->right), offset, &t->right, hi);
    update(t.get());
    *lo = std::move(t);
  } else {
    split(std::move(t->left), offset, lo, &t->left);
    update(t.get());
    *hi = std::move(t);
  }
}

// Every hole of `a` lies below every hole of `b`.
NodePtr merge(NodePtr a, NodePtr b) {
  if (!a) return b;
  if (!b) return a;
  if (a->priority > b->priority) {
    a->right = merge(std::move(a->right), std::move(b));
    update(a.get());
    return a;
  }
  b->left = merge(std::move(a), std::move(b->left));
  update(b.get());
  return b;
}

// Padding from `hole`'s start to the first offset whose address (origin + offset) is a multiple of
// `alignment`, if `size` bytes fit after it. Unsigned wraparound keeps the residue right even when
// origin + offset overflows, since `alignment` divides 2^64.
std::optional<size_t> fit_padding(const Node& hole, uintptr_t origin, size_t size,
                                  size_t alignment) {
  const size_t pad = (alignment - (origin + hole.offset) % alignment) % alignment;
  if (pad > hole.size || size > hole.size - pad) return std::nullopt;
  return pad;
}

// The lowest hole that can hold `size` at `alignment`. Subtrees whose largest hole is smaller than
// `size` are never entered.
const Node* find_first_fit(const Node* n, uintptr_t origin, size_t size, size_t alignment) {
  if (!n || n->max_size < size) return nullptr;
  if (const Node* hit = find_first_fit(n->left.get(), origin, size, alignment)) return hit;
  if (fit_padding(*n, origin, size, alignment)) return n;
  return find_first_fit(n->right.get(), origin, size, alignment);
}

// The hole with the greatest offset below `offset`, and the one with the least offset above it.
const Node* below(const Node* n, size_t offset) {
  const Node* best = nullptr;
  while (n) {
    if (n->offset < offset) {
      best = n;
      n = n->right.get();
    } else {
      n = n->left.get();
    }
  }
  return best;
}
const Node* above(const Node* n, size_t offset) {
  const Node* best = nullptr;
  while (n) {
    if (n->offset > offset) {
      best = n;
      n = n->left.get();
    } else {
      n = n->right.get();
    }
  }
  return best;
}

void insert(NodePtr* root, size_t offset, size_t size) {
  auto node =
      std::make_unique<Node>(Node{offset, size, size, priority_of(offset), nullptr, nullptr});
  NodePtr lo, hi;
  split(std::move(*root), offset, &lo, &hi);
  *root = merge(merge(std::move(lo), std::move(node)), std::move(hi));
}

void erase(NodePtr* root, size_t offset) {
  NodePtr lo, rest, hit, hi;
  split(std::move(*root), offset, &lo, &rest);
  split(std::move(rest), offset + 1, &hit, &hi);
  *root = merge(std::move(lo), std::move(hi));
}

void collect(const Node* n, std::vector<FreeList::Hole>* out) {
  if (!n) return;
  collect(n->left.get(), out);
  out->push_back({n->offset, n->size});
  collect(n->right.get(), out);
}

}  // namespace

FreeList::FreeList(uintptr_t origin) : origin_(origin) {}
FreeList::~FreeList() = default;
FreeList::FreeList(FreeList&&) noexcept = default;
FreeList& FreeList::operator=(FreeList&&) noexcept = default;

void FreeList::add(size_t offset, size_t size) {
  if (size == 0) return;
  if (const Node* prev = below(root_.get(), offset); prev && prev->offset + prev->size == offset) {
    offset = prev->offset;
    size += prev->size;
    erase(&root_, offset);
    --count_;
  }
  if (const Node* next = above(root_.get(), offset); next && offset + size == next->offset) {
    size += next->size;
    erase(&root_, next->offset);
    --count_;
  }
  insert(&root_, offset, size);
  ++count_;
}

std::optional<size_t> FreeList::take_first_fit(size_t size, size_t alignment) {
  const Node* hit = find_first_fit(root_.get(), origin_, size, alignment);
  if (!hit) return std::nullopt;
  const Hole hole{hit->offset, hit->size};
  const size_t pad = *fit_padding(*hit, origin_, size, alignment);
  const size_t at = hole.offset + pad;
  erase(&root_, hole.offset);
  --count_;
  // The leftovers touch no other hole (holes are coalesced), so they go back without merging.
  if (pad) {
    insert(&root_, hole.offset, pad);
    ++count_;
  }
  if (const size_t tail = hole.size - pad - size) {
    insert(&root_, at + size, tail);
    ++count_;
  }
  return at;
}

size_t FreeList::largest() const { return max_of(root_); }

std::vector<FreeList::Hole> FreeList::holes() const {
  std::vector<Hole> out;
  out.reserve(count_);
  collect(root_.get(), &out);
  return out;
}

}  // namespace mori::heap
