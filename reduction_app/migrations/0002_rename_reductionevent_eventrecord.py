# The Django model of recorded events is EventRecord, apart from the engine's ReductionEvent
# value. The rows and the table's data stay; only the names change (the table, and the
# indexes whose generated names follow the model's).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('reduction_app', '0001_initial'),
    ]

    operations = [
        migrations.RenameModel(
            old_name='ReductionEvent',
            new_name='EventRecord',
        ),
        migrations.RenameIndex(
            model_name='eventrecord',
            new_name='reduction_a_workspa_aa967f_idx',
            old_name='reduction_a_workspa_03bb93_idx',
        ),
        migrations.RenameIndex(
            model_name='eventrecord',
            new_name='reduction_a_workspa_f2d707_idx',
            old_name='reduction_a_workspa_f7f8e0_idx',
        ),
    ]
