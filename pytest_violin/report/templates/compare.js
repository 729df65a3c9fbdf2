(function(){
var ft=document.getElementById('f-task'),fv=document.getElementById('f-var'),fd=document.getElementById('f-dis'),
ff=document.getElementById('f-fail'),cnt=document.getElementById('f-count'),rows=document.querySelectorAll('tr.s');
function apply(){var task=ft.value,v=fv.value,dis=fd.checked,fail=ff.checked,shown=0;
for(var i=0;i<rows.length;i++){var r=rows[i],ok=true;
if(task&&r.getAttribute('data-task')!==task)ok=false;
if(ok&&v&&r.getAttribute('data-variation')!==v)ok=false;
if(ok&&dis&&r.getAttribute('data-disagree')!=='1')ok=false;
if(ok&&fail&&r.getAttribute('data-fail')!=='1')ok=false;
r.style.display=ok?'':'none';if(ok)shown++;}
cnt.textContent=shown+' of '+rows.length+' samples shown';}
ft.addEventListener('change',apply);fv.addEventListener('change',apply);fd.addEventListener('change',apply);
ff.addEventListener('change',apply);apply();
})();
