# packaging/install_unit.cmake: installs gapwatchd.service with its ExecStart naming the gapwatchd
# of this install: the prefix is known only now (`cmake --install --prefix P` gives P/bin/gapwatchd;
# cpack installs with the prefix /usr and a DESTDIR, so the .deb's unit says /usr/bin/gapwatchd).
# Run by install(SCRIPT) after packaging/CMakeLists.txt's install(CODE) has set
# GAPWATCH_UNIT_IN (the template), GAPWATCH_UNIT_WORK_DIR (a folder in the build) and
# GAPWATCH_INSTALL_BINDIR.

set(GAPWATCHD "${CMAKE_INSTALL_PREFIX}/${GAPWATCH_INSTALL_BINDIR}/gapwatchd")
# One file per destination: two installs at once (a test's, cpack's) cannot swap their units.
string(MD5 destination_key "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
set(unit "${GAPWATCH_UNIT_WORK_DIR}/${destination_key}/gapwatchd.service")
configure_file("${GAPWATCH_UNIT_IN}" "${unit}" @ONLY)
# file(INSTALL) as install(FILES) does it: DESTDIR, the "-- Installing:" line, the manifest.
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/user" TYPE FILE FILES "${unit}")
