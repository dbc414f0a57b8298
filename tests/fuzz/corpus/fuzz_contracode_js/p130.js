async
function f() {}