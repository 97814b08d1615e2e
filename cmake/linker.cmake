# mold (Debian package) links the host presets' programs (docs/testing.md,
# "Build time"): the same programs, linked in a fraction of GNU ld's time,
# which matters for the sanitizer preset's large test binaries. Cross and
# firmware builds keep their toolchain's linker (the firmware's linker script
# and footprint budget are measured with it).
option(FEDRT_MOLD "Link host programs with mold when it is installed" ON)
if(FEDRT_MOLD AND NOT CMAKE_CROSSCOMPILING)
  find_program(FEDRT_MOLD_PROGRAM mold)
  if(FEDRT_MOLD_PROGRAM)
    add_link_options(-fuse-ld=mold)
  endif()
endif()
