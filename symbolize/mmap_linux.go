package symbolize

import "syscall"

// mapPopulate makes mapAnon allocate pages up front (see there).
const mapPopulate = syscall.MAP_POPULATE
