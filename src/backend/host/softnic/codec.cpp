#include "backend/host/softnic/codec.hpp"

namespace mori::softnic {

const Codec* codec_for(state::Nic nic) {
  switch (nic) {
    case state::Nic::kMlx5:
      return &mlx5_codec();
    case state::Nic::kBnxt:
      return &bnxt_codec();
    case state::Nic::kIonic:
      return &ionic_codec();
    case state::Nic::kNone:
      break;
  }
  return nullptr;
}

}  // namespace mori::softnic
