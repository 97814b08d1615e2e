#pragma once
// Files of the keys folder (docs/security.md, "Provisioning a fleet"):
// secrets, and the lists a running coordinator polls (registry.tsv,
// revoked.tsv). Every one is written with mode 0600 whatever the umask.
// Host only.

#include <string>

#include "fedrt/core/status.h"

namespace fedrt::net {

// Writes `data` to `path` (created or truncated), mode 0600.
Status WritePrivateFile(const std::string& path, const std::string& data);

// Replaces `path` atomically: PATH.tmp (mode 0600) is written and fsynced,
// renamed over PATH, and the folder is fsynced. A reader (a coordinator
// polling the file) sees the old content or the new one, never a part.
Status ReplacePrivateFile(const std::string& path, const std::string& data);

// The whole file, or an error naming it.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace fedrt::net
