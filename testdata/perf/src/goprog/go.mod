module perfcheck.test/goprog

go 1.26
