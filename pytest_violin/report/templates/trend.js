(function(){
var box=document.getElementById('t-var'),cnt=document.getElementById('t-count'),
groups=document.querySelectorAll('g.series'),tasks=0;
for(var i=0;i<groups.length;i++)if(groups[i].getAttribute('data-series')==='(all)')tasks++;
function apply(){var shown=0;
for(var i=0;i<groups.length;i++){var g=groups[i],ok=box.checked||g.getAttribute('data-series')==='(all)';
g.style.display=ok?'':'none';if(ok)shown++;}
cnt.textContent=shown+' of '+groups.length+' lines shown ('+tasks+' task lines)';}
box.addEventListener('change',apply);apply();
})();
