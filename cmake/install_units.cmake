# Run by `cmake --install` (cmake/install.cmake): the systemd units of
# packaging/systemd with the programs' and data's paths of this install's
# prefix (/usr for the Debian packages, /usr/local for ./fedrt install).
# Expects FEDRT_UNIT_SRC, FEDRT_UNITS, FEDRT_UNIT_DIR, FEDRT_BINDIR,
# FEDRT_DATADIR and FEDRT_DOCDIR (relative to the prefix) and FEDRT_UNIT_TMP
# (a folder of the build) from install(CODE).
# (CPack installs with CMAKE_INSTALL_PREFIX=/usr and a DESTDIR of its own,
# which file(INSTALL) adds.)
set(_prefix "${CMAKE_INSTALL_PREFIX}")
foreach(_unit IN LISTS FEDRT_UNITS)
  file(READ "${FEDRT_UNIT_SRC}/${_unit}" _text)
  foreach(_dir BINDIR DATADIR DOCDIR)
    string(REPLACE "@FEDRT_${_dir}@" "${_prefix}/${FEDRT_${_dir}}" _text "${_text}")
  endforeach()
  set(_out "${FEDRT_UNIT_TMP}/${_unit}")
  file(WRITE "${_out}" "${_text}")
  file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${FEDRT_UNIT_DIR}" TYPE FILE FILES "${_out}")
endforeach()
