# Compression layer settings and the federated EM family. The codecs
# themselves are header-only device code (runtime/include/fedrt/compression).
# (The settings are part of the config module, CMakeLists.txt.)

