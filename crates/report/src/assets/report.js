// Hover values for chart points and bars: shows the element's data-tip
// next to the pointer. Inlined; no network, no library.
(function () {
  var tip = document.getElementById("tip");
  if (!tip) { return; }
  document.addEventListener("mouseover", function (e) {
    var t = e.target && e.target.getAttribute ? e.target.getAttribute("data-tip") : null;
    if (t) { tip.textContent = t; tip.style.display = "block"; }
  });
  document.addEventListener("mousemove", function (e) {
    tip.style.left = (e.pageX + 12) + "px";
    tip.style.top = (e.pageY + 12) + "px";
  });
  document.addEventListener("mouseout", function (e) {
    if (e.target && e.target.getAttribute && e.target.getAttribute("data-tip")) { tip.style.display = "none"; }
  });
})();
