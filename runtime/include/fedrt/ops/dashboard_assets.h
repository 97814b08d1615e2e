#pragma once
// The dashboard's static files (runtime/web/dashboard), compiled into the
// coordinator by cmake/embed_assets.cmake: the HTTP endpoint serves these
// bytes and nothing from the file system (docs/dashboard.md). Host code.

#include <cstddef>
#include <string>
#include <vector>

namespace fedrt::net {

struct Asset {
  const char* path;  // "/index.html", "/dashboard.js", ...
  const char* data;
  size_t size;
};

const std::vector<Asset>& DashboardAssets();

}  // namespace fedrt::net
