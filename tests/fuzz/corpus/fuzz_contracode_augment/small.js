function add(a, b) {
  var s = a + b;
  if (s > 10) {
    return s - 1;
  }
  return s;
}
var k = function (x, y) { return x * y + add(x, y); };
