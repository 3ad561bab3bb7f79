// reactor-devtools --export report: the one behaviour the static sections need (VIEWER.md §8.18).
// An "open in tab" button opens the .html output previewed in the iframe before it as a blob URL,
// without an opener. The page's CSP allows this script by its hash and nothing else.
(function () {
  'use strict';
  document.addEventListener('click', function (e) {
    var b = e.target instanceof Element ? e.target.closest('button.open-tab') : null;
    if (!b) return;
    var frame = b.previousElementSibling;
    if (!frame || frame.tagName !== 'IFRAME') return;
    var url = URL.createObjectURL(new Blob([frame.getAttribute('srcdoc') || ''], { type: 'text/html' }));
    window.open(url, '_blank', 'noopener');
    setTimeout(function () {
      URL.revokeObjectURL(url);
    }, 60000);
  });
})();
