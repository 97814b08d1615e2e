#include "fedrt/keys/watch.h"

#include <sys/stat.h>

namespace fedrt::net {

KeysWatch::KeysWatch(std::string keys_dir)
    : registry_path_(keys_dir + "/registry.tsv"), revoked_path_(keys_dir + "/revoked.tsv") {}

KeysWatch::Stamp KeysWatch::StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Stamp{};
  return Stamp{static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
               static_cast<int64_t>(st.st_size)};
}

Result<KeysWatch::Changes> KeysWatch::poll() {
  Changes c;
  const Stamp reg = StampOf(registry_path_);
  if (reg != registry_) {
    registry_ = reg;  // a broken file is reported once, and read again when it changes
    auto entries = LoadRegistry(registry_path_);
    if (!entries.ok()) return entries.status();
    c.registry = true;
    c.entries = std::move(*entries);
  }
  const Stamp rev = StampOf(revoked_path_);
  if (rev != revoked_) {
    revoked_ = rev;
    auto list = ReadRevocations(revoked_path_);  // a missing file: no revocations
    if (!list.ok()) return list.status();
    c.revoked = true;
    c.revocations = std::move(*list);
  }
  return c;
}

}  // namespace fedrt::net
