# Compression layer settings and the federated EM family (issue 4). The codecs
# themselves are header-only device code (runtime/include/fedrt/compression).
target_sources(fedrt_host PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/src/sim/compression_em_config.cc
)

