package explore

import "syscall"

const oNoFollow = syscall.O_NOFOLLOW
